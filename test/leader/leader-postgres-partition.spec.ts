import pg from 'pg';
import { until } from '../support/backends.js';
import { FencedResource, LeaderProcess } from '../support/leader-child.js';
import { LATE_TIMER_SLACK_MS, violationsOf } from '../support/leader-history.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const TTL = 1_000;

/**
 * A PostgreSQL leader cut off from the database (each replica reaches it, pool and listener,
 * through a proxy of its own, which holds every byte while cut), or whose connections the
 * server ends. The lease is a row with an expiry on the database's clock, not a session: a
 * leader that cannot renew it must be told before the row expires and a standby is elected, on
 * the machine's clock; what it sent meanwhile, delivered once the cut heals, must not give it
 * the leadership back; and connections ended under a leader that can renew on new ones cost
 * nothing.
 */
describe('leader election on PostgreSQL: a leader cut off from the database', () => {
  let server: PostgresServer;
  let db: pg.Pool;
  let prefix: string;
  let resource: FencedResource;
  let processes: LeaderProcess[];
  let proxies: TcpProxy[];

  beforeAll(async () => {
    server = await PostgresServer.start();
    db = new pg.Pool({ connectionString: server.url, max: 1 });
  }, 60_000);

  afterAll(async () => {
    await db.end();
    await server.stop();
  });

  beforeEach(async () => {
    prefix = uniquePrefix();
    resource = new FencedResource();
    proxies = await Promise.all([1, 2, 3].map(() => TcpProxy.start(server.port)));
    processes = await Promise.all(
      proxies.map((proxy, i) =>
        LeaderProcess.start(
          i + 1,
          {
            postgres: {
              connectionString: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
              application_name: `${prefix}${i + 1}`,
            },
            keyPrefix: prefix,
          },
          TTL,
          resource,
        ),
      ),
    );
  }, 60_000);

  afterEach(async () => {
    for (const proxy of proxies) proxy.resume();
    await Promise.all(processes.map((process) => process.close()));
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    const { rows } = await db.query(
      'SELECT key FROM nestjs_lock WHERE key LIKE $1 UNION ALL ' +
        'SELECT key FROM nestjs_lock_queue WHERE key LIKE $1',
      [`%${prefix}%`],
    );
    expect(rows).toEqual([]);
  }, 30_000);

  const leaders = () => processes.filter((process) => process.leading);
  const theLeader = async () => {
    await until(async () => leaders().length === 1, 20_000);
    return leaders()[0];
  };
  const leaderAfter = async (epoch: number) => {
    const later = () => processes.find((p) => p.terms.some((e) => e > epoch));
    await until(async () => later() !== undefined, 20_000);
    return later() as LeaderProcess;
  };
  const current = (process: LeaderProcess) => process.terms[process.terms.length - 1];
  const proxyOf = (process: LeaderProcess) => proxies[process.id - 1];
  /** The machine's monotonic clock, as the leader processes report their events on it. */
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  /** Whether the server still keeps the lease of the term `epoch`, by its own clock. */
  const leaseLive = async (epoch: number) => {
    const { rows } = await db.query(
      'SELECT FROM nestjs_lock WHERE key LIKE $1 AND fencing_token = $2 ' +
        'AND expires_at > clock_timestamp()',
      [`%${prefix}%`, epoch],
    );
    return rows.length > 0;
  };

  it('told before the next leader is elected when it cannot renew; what it sent while cut off does not make it lead again', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    proxyOf(leader).stall();
    await until(async () => !(await leaseLive(epoch)), 10_000);
    const leaseEnded = now();
    // Told when its validity ran out, before the server let the lease go (a timer of a
    // starved process may fire a little late, as the history allows).
    await until(async () => leader.event('abort', epoch) !== undefined, 10_000);
    expect(leader.event('abort', epoch)).toMatchObject({ reason: /validity ran out/ });
    expect(leader.event('abort', epoch)!.at).toBeLessThan(leaseEnded + LATE_TIMER_SLACK_MS);
    const next = await leaderAfter(epoch);
    expect(next).not.toBe(leader);
    expect(leader.event('abort', epoch)!.at).toBeLessThan(next.event('lead', current(next))!.at);
    // Healed: its renewals, its release and its next attempt, held meanwhile, reach the server.
    proxyOf(leader).resume();
    await sleep(2 * TTL);
    expect(leaders()).toEqual([next]);
    expect(leader.terms).toEqual([epoch]);
    // It stands again: the next resignation can make it leader.
    await next.resign();
    const after = await leaderAfter(current(next));
    await sleep(300);
    expect(leaders()).toEqual([after]);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);

  it('keeps leading through a cut shorter than its validity', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    proxyOf(leader).stall();
    await sleep(TTL / 4);
    proxyOf(leader).resume();
    await sleep(2 * TTL);
    expect(leaders()).toEqual([leader]);
    expect(processes.flatMap((process) => process.terms)).toEqual([epoch]);
  }, 60_000);

  it('keeps leading while the server ends its connections: it renews on new ones', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    let ended = 0;
    for (const end = performance.now() + 3 * TTL; performance.now() < end; await sleep(200)) {
      const { rows } = await db.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [`${prefix}${leader.id}`],
      );
      ended += rows.length;
    }
    expect(ended).toBeGreaterThan(3);
    await sleep(TTL);
    expect(leaders()).toEqual([leader]);
    expect(processes.flatMap((process) => process.terms)).toEqual([epoch]);
    // The standbys, whose listeners were not touched, still take over at once.
    await leader.resign();
    const next = await leaderAfter(epoch);
    expect(next).not.toBe(leader);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);
});
