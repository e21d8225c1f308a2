import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import type { LockModuleOptions } from '../../src/index.js';
import { until } from '../support/backends.js';
import { FencedResource, LeaderProcess } from '../support/leader-child.js';
import { violationsOf } from '../support/leader-history.js';
import { rawClient, sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisSentinelHarness } from '../support/redis-sentinel.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/**
 * The election's ttl: how long a dead or paused leader keeps the leadership on Redis and
 * PostgreSQL.
 */
const TTL = 1_000;
/** The ZooKeeper sessions' timeout: how long a dead or paused leader keeps it there. */
const SESSION = 3_000;

type Store = 'redis' | 'redis-cluster' | 'redis-sentinel' | 'zookeeper' | 'postgres';

/**
 * Three replicas of an app, each a process of its own, stand in one election while the leader
 * resigns, is SIGTERMed, killed or paused past its lease. Each term's leader writes to a fenced
 * resource here with its epoch; the history must show growing epochs, every term told it ended
 * before the next began (on the machine's monotonic clock), and only deposed leaders refused.
 */
describe.each<[Store]>([
  ['redis'],
  ['redis-cluster'],
  ['redis-sentinel'],
  ['zookeeper'],
  ['postgres'],
])('leader election across three processes (%s)', (store) => {
  let zookeeper: ZooKeeperServer | undefined;
  let postgres: PostgresServer | undefined;
  /** The test's own connections to PostgreSQL, to look behind the library's back. */
  let db: pg.Pool | undefined;
  let root: string;
  let prefix: string;
  let resource: FencedResource;
  let processes: LeaderProcess[];

  let cluster: RedisClusterHarness | undefined;
  let sentinel: RedisSentinelHarness | undefined;

  beforeAll(async () => {
    if (store === 'redis-cluster') cluster = await RedisClusterHarness.start(3);
    if (store === 'redis-sentinel') sentinel = await RedisSentinelHarness.start();
    if (store === 'zookeeper') zookeeper = await ZooKeeperServer.start();
    if (store === 'postgres') {
      postgres = await PostgresServer.start();
      db = new pg.Pool({ connectionString: postgres.url, max: 1 });
    }
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await sentinel?.stop();
    await zookeeper?.stop();
    await db?.end();
    await postgres?.stop();
  });

  const options = (): LockModuleOptions => {
    if (zookeeper) {
      return {
        zookeeper: { connectionString: zookeeper.address, sessionTimeout: SESSION, root },
        keyPrefix: prefix,
      };
    }
    if (postgres) return { postgres: postgres.url, keyPrefix: prefix };
    if (cluster) return { redis: { cluster: cluster.nodes }, keyPrefix: prefix };
    if (sentinel) {
      return { redis: { sentinels: sentinel.sentinels, name: sentinel.name }, keyPrefix: prefix };
    }
    return { redis: sharedRedisUrl(), keyPrefix: prefix };
  };

  const leaders = () => processes.filter((process) => process.leading);
  /** The one process that leads, once exactly one does. */
  const theLeader = async () => {
    await until(async () => leaders().length === 1, 20_000);
    return leaders()[0];
  };
  /** The process that began a term after `epoch`, once one has. */
  const leaderAfter = async (epoch: number) => {
    const later = () => processes.find((p) => p.terms.some((e) => e > epoch));
    await until(async () => later() !== undefined, 20_000);
    return later() as LeaderProcess;
  };
  const current = (process: LeaderProcess) => process.terms[process.terms.length - 1];

  beforeEach(async () => {
    prefix = uniquePrefix();
    root = `/leader-${randomBytes(4).toString('hex')}`;
    resource = new FencedResource();
    processes = await Promise.all(
      [1, 2, 3].map((id) => LeaderProcess.start(id, options(), TTL, resource)),
    );
  }, 60_000);

  afterEach(async () => {
    await Promise.all(processes.map((process) => process.close()));
    if (zookeeper) {
      const tree = await ZooKeeperTree.connect(zookeeper.address);
      try {
        expect(await tree.below(root)).toEqual([]);
      } finally {
        tree.close();
      }
    } else if (db) {
      const { rows } = await db.query(
        'SELECT key FROM nestjs_lock WHERE key LIKE $1 UNION ALL ' +
          'SELECT key FROM nestjs_lock_queue WHERE key LIKE $1',
        [`%${prefix}%`],
      );
      expect(rows).toEqual([]);
    } else {
      const servers = cluster
        ? cluster.ports.map((port) => rawClient(`redis://127.0.0.1:${port}`))
        : [rawClient(sentinel ? `redis://127.0.0.1:${sentinel.masterPort}` : sharedRedisUrl())];
      const keys = (await Promise.all(servers.map((server) => server.keys(`*${prefix}*`)))).flat();
      // What stays is the prefix's fencing counter (one per slot used on a Cluster), outside
      // the election's keys.
      expect(keys.filter((key) => !key.endsWith(':fence'))).toEqual([]);
      await Promise.all(servers.map((server) => server.quit()));
    }
  }, 30_000);

  it('elects one, which every replica can name, and hands over at once when it resigns', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    const standby = processes.find((process) => process !== leader) as LeaderProcess;
    // The default instanceId: the leader's host name and process id.
    await expect(standby.who()).resolves.toEqual({
      owner: `${hostname()}:${leader.child.pid}`,
      epoch,
    });
    await leader.resign();
    const next = await leaderAfter(epoch);
    expect(next).not.toBe(leader);
    await sleep(300);
    expect(leaders()).toEqual([next]);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);

  it('hands over when the leader is SIGTERMed (its shutdown steps down first)', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    leader.child.kill('SIGTERM');
    const next = await leaderAfter(epoch);
    await leader.exited;
    expect(next).not.toBe(leader);
    expect(leader.event('abort', epoch)?.at).toBeLessThan(next.event('lead', current(next))!.at);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);

  it('fails over when the leader is killed (kill -9), once its lease runs out', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    leader.child.kill('SIGKILL');
    await leader.exited;
    const next = await leaderAfter(epoch);
    expect(next).not.toBe(leader);
    expect(violationsOf(processes, resource, [leader])).toEqual([]);
  }, 60_000);

  it('lets another lead while the leader is paused past its lease; the fence refuses the old one', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    leader.child.kill('SIGSTOP');
    const next = await leaderAfter(epoch);
    // The new leader's writes go in before the old one wakes up.
    await until(async () => resource.writes.some((w) => w.epoch > epoch && w.accepted), 10_000);
    leader.child.kill('SIGCONT');
    await until(async () => leader.event('abort', epoch) !== undefined, 10_000);
    await sleep(500);
    const stale = resource.writes.filter((w) => w.process === leader.id && w.epoch === epoch);
    const refused = stale.filter((w) => !w.accepted);
    // It wrote on after it woke up, as a paused leader does before it learns: all refused.
    expect(refused.length).toBeGreaterThan(0);
    expect(stale.slice(stale.indexOf(refused[0])).every((w) => !w.accepted)).toBe(true);
    expect(next.leading).toBe(true);
    expect(leader.leading).toBe(false);
    expect(violationsOf(processes, resource, [leader])).toEqual([]);
  }, 60_000);
});
