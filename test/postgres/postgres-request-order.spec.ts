import pg from 'pg';
import { LockConnectionError, type LockModuleOptions } from '../../src/index.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The store runs a process's requests on a pool of connections, so two requests for one lock
 * may travel on two of them, and the one sent first may reach the server last. The engine
 * dates what it believes of a lock by when each request was sent, as one ordered connection
 * would apply them: the store must apply the requests of one lock in that order too, or the
 * holder believes in a lease that the server has already cut short or deleted.
 */
describe('PostgreSQL backend: the requests for one lock apply in the order they were sent', () => {
  let server: PostgresServer;
  let proxy: TcpProxy;
  let db: pg.Pool;
  let apps: LockApp[] = [];
  let prefix: string;

  const boot = async (extra: LockModuleOptions = {}) => {
    const app = await bootLockApp({ postgres: server.url, keyPrefix: prefix, ...extra });
    apps.push(app);
    return app;
  };
  /** A holder whose pooled connections go through the proxy; it listens on a direct one. */
  const bootHolder = (extra: LockModuleOptions = {}) =>
    boot({
      postgres: {
        connectionString: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
        listen: server.url,
      },
      ...extra,
    });
  /** Whether the server keeps `key`'s row for at least `ms` more, by its own clock. */
  const liveFor = async (key: string, ms: number) => {
    const { rows } = await db.query<{ live: boolean }>(
      `SELECT expires_at > clock_timestamp() + $2 * interval '1 millisecond' AS live
         FROM nestjs_lock WHERE key = $1`,
      [key, ms],
    );
    return rows[0]?.live ?? false;
  };

  beforeAll(async () => {
    server = await PostgresServer.start();
    proxy = await TcpProxy.start(server.port);
    db = new pg.Pool({ connectionString: server.url, max: 2 });
  }, 60_000);

  beforeEach(() => {
    prefix = uniquePrefix();
  });

  afterEach(async () => {
    proxy.resume();
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
    const { rows } = await db.query('SELECT key FROM nestjs_lock WHERE key LIKE $1', [
      `${prefix}%`,
    ]);
    expect(rows).toEqual([]);
  });

  afterAll(async () => {
    await proxy?.stop();
    await db?.end();
    await server?.stop();
  });

  it('an extend sent while a renewal is held up on its connection is applied after it: the lease is the one the holder believes in', async () => {
    const holder = await bootHolder();
    const other = await boot();
    const lock = await holder.locks.acquire('extended', { ttl: 3_000 });
    // The watchdog's next renewal (for 3 s) is held up on its way to the server...
    await proxy.stallNextSender();
    // ...and the extend, sent after it, travels on another connection of the pool.
    const extended = lock.extend(60_000);
    await Promise.race([extended, sleep(1_000)]);
    proxy.resume();
    expect(await extended).toBe(true);
    // Past the end that the renewal would give the lease, had it been applied last.
    await sleep(4_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await liveFor(lock.key, 30_000)).toBe(true);
    const intruder = await other.locks.tryAcquire('extended');
    await intruder?.release();
    expect(intruder).toBeNull();
    expect(await lock.release()).toBe(true);
  });

  it('a request for one lock that hangs holds up no renewal of the other locks of its batch', async () => {
    const holder = await bootHolder({ commandTimeout: 500 });
    // Taken together, so that the watchdog renews them in one batch.
    const [stuck, kept] = await Promise.all([
      holder.locks.acquire('stuck', { ttl: 1_500 }),
      holder.locks.acquire('kept', { ttl: 1_500 }),
    ]);
    // One lock's extend hangs on its connection (it times out here, unsettled there)...
    void proxy.stallNextSender();
    await expect(stuck.extend()).rejects.toBeInstanceOf(LockConnectionError);
    // ...while the other lock is renewed on the other connections, past several ttls.
    await sleep(4_000);
    expect(kept.signal.aborted).toBe(false);
    expect(await liveFor(kept.key, 0)).toBe(true);
    proxy.resume();
    expect(await kept.release()).toBe(true);
    await stuck.release().catch(() => false);
  });

  it('an extend sent after a release that timed out is not applied before that release: it never confirms a lease that the release then deletes', async () => {
    const holder = await bootHolder({ commandTimeout: 500 });
    const lock = await holder.locks.acquire('released', { ttl: 10_000 });
    void proxy.stallNextSender();
    // The release is held up: it times out here. The server will still apply it once it gets
    // there, so the holder counts on the lock no more...
    await expect(lock.release()).rejects.toBeInstanceOf(LockConnectionError);
    expect(lock.signal.aborted).toBe(true);
    // ...and an extend sent now must not confirm a lease either.
    const extended = lock.extend().catch(() => false);
    await Promise.race([extended, sleep(1_500)]);
    proxy.resume();
    while (await liveFor(lock.key, 0)) await sleep(20);
    // The row is gone: an extend that was confirmed has to have been applied before the
    // release, which was sent first; and a holder that believes it would let anyone in.
    const confirmed = await extended;
    expect(confirmed && !lock.signal.aborted).toBe(false);
  });
});
