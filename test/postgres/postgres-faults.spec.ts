import pg from 'pg';
import { LockLostError, type LockModuleOptions } from '../../src/index.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import type { LockStore } from '../../src/store/lock-store.interface.js';
import { aborted, bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * What a holder and its waiters see when their connections are cut, the network stalls or the
 * server restarts, and how a waiter is woken. The lease is a row with an expiry on the
 * database's clock, not a session: a cut connection costs nothing while the holder can renew on
 * another one within its validity; a holder that cannot is told, through its signal, before
 * the row can expire and anybody else get in.
 */
describe('PostgreSQL backend: cut connections, stalls, restarts and wake-ups', () => {
  let server: PostgresServer;
  let db: pg.Pool;
  let apps: LockApp[] = [];
  let options: LockModuleOptions;

  const boot = async (extra: LockModuleOptions = {}) => {
    const app = await bootLockApp({ ...options, ...extra });
    apps.push(app);
    return app;
  };
  const storeOf = (app: LockApp) => app.module.get<{ store: LockStore }>(LOCK_ENGINE).store;

  beforeAll(async () => {
    server = await PostgresServer.start();
    db = new pg.Pool({ connectionString: server.url, max: 2 });
    // Its idle connections break when the server restarts: the next query opens new ones.
    db.on('error', () => undefined);
  }, 60_000);

  beforeEach(() => {
    options = { postgres: server.url, keyPrefix: uniquePrefix(), waitTimeout: 30_000 };
  });

  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
    const { rows } = await db.query<{ key: string }>(
      'SELECT key FROM nestjs_lock UNION ALL SELECT key FROM nestjs_lock_queue',
    );
    expect(rows).toEqual([]);
  });

  afterAll(async () => {
    await db?.end();
    await server?.stop();
  });

  it('wakes a waiter with NOTIFY: the attempt that takes the lock is the one its turn prompts, and nothing polls meanwhile', async () => {
    const holder = await boot();
    const waiter = await boot();
    const store = storeOf(waiter);
    /** Each attempt of the waiter: whether a notice prompted it, and what it got. */
    const attempts: { prompted: boolean; acquired?: boolean }[] = [];
    let hearing = false;
    const acquire = store.acquire.bind(store);
    store.acquire = async (...args) => {
      const attempt: { prompted: boolean; acquired?: boolean } = { prompted: hearing };
      attempts.push(attempt);
      const result = await acquire(...args);
      attempt.acquired = result.acquired;
      return result;
    };
    const subscribe = store.subscribe.bind(store);
    store.subscribe = (key, onEvent, instance) =>
      subscribe(
        key,
        (event) => {
          // The engine makes the prompted attempt at once: within the microtasks of this call.
          hearing = true;
          onEvent(event);
          setImmediate(() => (hearing = false));
        },
        instance,
      );
    let prompted = 0;
    for (let round = 0; round < 3; round++) {
      attempts.length = 0;
      const held = await holder.locks.acquire('wake');
      const next = waiter.locks.acquire('wake');
      // Long enough for the fallback re-check to back off to about a second.
      await sleep(2_500);
      const before = attempts.length;
      await held.release();
      const lock = await next;
      expect(attempts.at(-1)?.acquired).toBe(true);
      if (attempts.at(-1)?.prompted) prompted++;
      // A backoff of a few re-checks while the lock was held, not an attempt every few ms.
      expect(before).toBeLessThan(10);
      await lock.release();
    }
    // A re-check may by chance fire between the release and its notice, and take the lock
    // reserved for the waiter; without the notices, none of the three is prompted.
    expect(prompted).toBeGreaterThanOrEqual(2);
  });

  it('a holder whose connections the server terminates keeps its lock: it renews on new ones', async () => {
    const config = { connectionString: server.url, application_name: 'cut-holder' };
    const holder = await boot({ postgres: config });
    const other = await boot();
    const lock = await holder.locks.acquire('terminated', { ttl: 1_500 });
    const waiting = other.locks.acquire('terminated');
    let cuts = 0;
    // Every connection of the holder, pooled or listening, cut several times per renewal.
    for (const end = performance.now() + 4_000; performance.now() < end; await sleep(200)) {
      const { rows } = await db.query<{ cut: boolean }>(
        `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity
          WHERE application_name = 'cut-holder'`,
      );
      cuts += rows.length;
    }
    expect(cuts).toBeGreaterThan(5);
    expect(lock.signal.aborted).toBe(false);
    expect(await other.locks.isLocked('terminated')).toBe(true);
    expect(await lock.release()).toBe(true);
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it('a waiter whose listening connection is terminated is still served', async () => {
    const holder = await boot();
    const config = { connectionString: server.url, application_name: 'cut-waiter' };
    const waiter = await boot({ postgres: config });
    const lock = await holder.locks.acquire('deaf');
    const next = waiter.locks.acquire('deaf');
    await sleep(300);
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cut-waiter'`,
    );
    await lock.release();
    await (await next).release();
  });

  it('a holder cut off by the network is told before its lease can expire and another gets in', async () => {
    const proxy = await TcpProxy.start(server.port);
    try {
      const url = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
      const holder = await boot({ postgres: url, commandTimeout: 200 });
      const other = await boot();
      const lock = await holder.locks.acquire('stalled', { ttl: 1_000 });
      let lostWhenTaken: boolean | undefined;
      proxy.stall();
      const taken = other.locks.acquire('stalled').then((next) => {
        lostWhenTaken = lock.signal.aborted;
        return next;
      });
      expect(await aborted(lock)).toBeInstanceOf(LockLostError);
      const next = await taken;
      expect(lostWhenTaken).toBe(true);
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
      proxy.resume();
      expect(await lock.release()).toBe(false);
      await next.release();
    } finally {
      await proxy.stop();
    }
  });

  it('a PostgreSQL restart under a holder: nobody gets in beside it, and waiters are served after', async () => {
    const holder = await boot({ commandTimeout: 1_000 });
    const other = await boot({ commandTimeout: 1_000 });
    const lock = await holder.locks.acquire('restart', { ttl: 2_000 });
    let releasing = false;
    let beside: boolean | undefined;
    const taken = other.locks.acquire('restart').then((next) => {
      beside = !releasing && !lock.signal.aborted;
      return next;
    });
    const queued = async () =>
      (await db.query('SELECT FROM nestjs_lock_queue WHERE key = $1', [lock.key])).rowCount === 1;
    while (!(await queued())) await sleep(20);
    await sleep(300);
    await server.restart('immediate');
    // The rows survive the restart; the holder either renewed in time or was told.
    await sleep(1_000);
    releasing = true;
    await lock.release().catch(() => false);
    const next = await taken;
    expect(beside).toBe(false);
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });
});
