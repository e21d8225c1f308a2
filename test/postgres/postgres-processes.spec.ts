import pg from 'pg';
import { postgresLockSchema, type LockModuleOptions } from '../../src/index.js';
import { aborted, bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { LockProcess } from '../support/lock-child.js';
import { PostgresServer } from '../support/postgres-server.js';

/**
 * App instances in processes of their own on one throwaway PostgreSQL: exclusion and fencing
 * order across three of them, and a holder killed with SIGKILL, whose lease must run out on
 * the database's clock before anybody else gets in.
 */
describe('PostgreSQL backend across processes', () => {
  let server: PostgresServer;
  let db: pg.Pool;
  let processes: LockProcess[] = [];
  let apps: LockApp[] = [];
  let options: LockModuleOptions;

  const start = async (extra: LockModuleOptions = {}) => {
    const instance = await LockProcess.start({ ...options, ...extra });
    processes.push(instance);
    return instance;
  };
  const boot = async (extra: LockModuleOptions = {}) => {
    const app = await bootLockApp({ ...options, ...extra });
    apps.push(app);
    return app;
  };
  /** A non-atomic read-modify-write of a row: two overlapping runs lose an update. */
  const unsafeIncrement = async () => {
    const { rows } = await db.query<{ value: number }>('SELECT value FROM counter WHERE id = 1');
    await sleep(Math.random() * 5);
    await db.query('UPDATE counter SET value = $1 WHERE id = 1', [rows[0].value + 1]);
  };
  const counter = async () =>
    (await db.query<{ value: number }>('SELECT value FROM counter WHERE id = 1')).rows[0].value;

  beforeAll(async () => {
    server = await PostgresServer.start();
    db = new pg.Pool({ connectionString: server.url, max: 4 });
    await db.query('CREATE TABLE counter (id int PRIMARY KEY, value int NOT NULL)');
    // As a migration would: the apps then find their tables in place.
    await db.query(postgresLockSchema());
  }, 60_000);

  beforeEach(async () => {
    options = { postgres: server.url, keyPrefix: uniquePrefix(), waitTimeout: 60_000 };
    await db.query('INSERT INTO counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET value = 0');
  });

  afterEach(async () => {
    await Promise.all([...processes, ...apps].map((instance) => instance.close()));
    processes = [];
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

  it('the read-modify-write loses updates without a lock (the check can fail)', async () => {
    await Promise.all(Array.from({ length: 30 }, unsafeIncrement));
    expect(await counter()).toBeLessThan(30);
  });

  it('three processes lose no update of a row, and fencing tokens grow in the order of the grants', async () => {
    const three = [await start(), await start(), await start()];
    const tokens: number[] = [];
    await Promise.all(
      Array.from({ length: 45 }, async (_, i) => {
        const lock = await three[i % 3].acquire('counter');
        tokens.push(lock.fencingToken);
        await unsafeIncrement();
        expect(await lock.release()).toBe(true);
      }),
    );
    expect(await counter()).toBe(45);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(45);
  });

  it('a holder killed with SIGKILL frees the key once its lease has run out on the database, not before', async () => {
    const holder = await start({ ttl: 1_500 });
    const waiter = await boot();
    const held = await holder.acquire('crash');
    const next = waiter.locks.acquire('crash', { waitTimeout: 20_000 });
    await holder.kill('SIGKILL');
    const killedAt = performance.now();
    const { rows } = await db.query<{ left: number }>(
      `SELECT extract(epoch FROM expires_at - clock_timestamp()) * 1000 AS left
         FROM nestjs_lock WHERE key = $1`,
      [`${options.keyPrefix}crash`],
    );
    const lock = await next;
    expect(performance.now() - killedAt).toBeGreaterThanOrEqual(Number(rows[0].left));
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(await lock.release()).toBe(true);
  });

  it('a waiter killed in line costs the others about a handover lease, never its ttl', async () => {
    const holder = await boot();
    const dying = await start({ ttl: 60_000 });
    const behind = await boot();
    const held = await holder.locks.acquire('line');
    void dying.acquire('line').catch(() => undefined);
    const waiting = async (n: number) => {
      const { rows } = await db.query<{ count: string }>(
        'SELECT count(*) FROM nestjs_lock_queue WHERE key = $1',
        [held.key],
      );
      return Number(rows[0].count) === n;
    };
    while (!(await waiting(1))) await sleep(10);
    const next = behind.locks.acquire('line', { waitTimeout: 20_000 });
    while (!(await waiting(2))) await sleep(10);
    await dying.kill('SIGKILL');
    await held.release();
    const lock = await next;
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  });

  it('a lock left to its ttl (watchdog off) goes to the next process with a greater token', async () => {
    const [first, second] = [await start(), await start()];
    const short = await first.acquire('expiring', { ttl: 300, watchdog: false });
    const next = await second.acquire('expiring', { waitTimeout: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(short.fencingToken);
    expect(await short.release()).toBe(false);
    await next.release();
  });

  it('tells a holder that finds its row gone through its signal', async () => {
    const app = await boot();
    const lock = await app.locks.acquire('evicted', { ttl: 300 });
    await db.query('DELETE FROM nestjs_lock WHERE key = $1', [lock.key]);
    await expect(aborted(lock)).resolves.toBeInstanceOf(Error);
  });

  it('a lock handed to another process becomes its row, owner included, which no second process may adopt', async () => {
    const app = await boot({ instanceId: 'scheduler' });
    const [first, second] = [
      await start({ instanceId: 'first' }),
      await start({ instanceId: 'second' }),
    ];
    const lock = await app.locks.acquire('handed');
    const handle = await lock.handOff();
    const adopted = await first.adopt(handle);
    await expect(second.adopt(handle)).rejects.toThrow(/^LockLostError/);
    const { rows } = await db.query('SELECT owner, fencing_token FROM nestjs_lock WHERE key = $1', [
      lock.key,
    ]);
    expect(rows).toEqual([{ owner: 'first', fencing_token: String(lock.fencingToken) }]);
    expect((await app.locks.inspect('handed')).holders).toMatchObject([{ owner: 'first' }]);
    expect(await adopted.release()).toBe(true);
  });
});
