import pg from 'pg';
import type { LockModuleOptions } from '../../src/index.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { PostgresServer } from '../support/postgres-server.js';

/**
 * The PostgreSQL backend behind a real PgBouncer in transaction mode, with two server
 * connections for all its clients: each statement of the pool may run on another server
 * connection, so nothing of the protocol may live in a session. The listener needs one (LISTEN):
 * with `listen` it has its own; without, a notice may go to a connection nobody reads, and
 * waiters are still served, by the re-check.
 */
describe('PostgreSQL through PgBouncer in transaction mode', () => {
  let server: PostgresServer;
  let bouncer: PgBouncer;
  let db: pg.Pool;
  let apps: LockApp[] = [];

  const boot = async (options: LockModuleOptions) => {
    const app = await bootLockApp({ waitTimeout: 60_000, ...options });
    apps.push(app);
    return app;
  };
  /** A non-atomic read-modify-write of a row: two overlapping runs lose an update. */
  const unsafeIncrement = async () => {
    const { rows } = await db.query<{ value: number }>('SELECT value FROM counter WHERE id = 1');
    await sleep(Math.random() * 3);
    await db.query('UPDATE counter SET value = $1 WHERE id = 1', [rows[0].value + 1]);
  };
  /** Callers of `apps` in turn queue on `key` behind a holder, then get it in arrival order. */
  const servedInArrivalOrder = async (first: LockApp, second: LockApp) => {
    const holder = await first.locks.acquire('line');
    const served: number[] = [];
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      const app = i % 2 === 0 ? second : first;
      calls.push(app.locks.using('line', () => void served.push(i)));
      for (let tries = 0; (await first.locks.inspect('line')).waiting < i + 1; tries++) {
        if (tries > 200) throw new Error(`caller ${i} did not take its place in line`);
        await sleep(10);
      }
    }
    await holder.release();
    await Promise.all(calls);
    return served;
  };

  beforeAll(async () => {
    server = await PostgresServer.start();
    bouncer = await PgBouncer.start(server.port, { poolSize: 2 });
    db = new pg.Pool({ connectionString: server.url, max: 4 });
    await db.query('CREATE TABLE counter (id int PRIMARY KEY, value int NOT NULL)');
  }, 60_000);

  beforeEach(async () => {
    await db.query('INSERT INTO counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET value = 0');
  });

  afterEach(async () => {
    if (apps.length === 0) return;
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
    const { rows } = await db.query<{ key: string }>(
      'SELECT key FROM nestjs_lock UNION ALL SELECT key FROM nestjs_lock_queue',
    );
    expect(rows).toEqual([]);
  });

  afterAll(async () => {
    await db?.end();
    await bouncer?.stop();
    await server?.stop();
  });

  it('lends its two server connections to many clients, one transaction at a time', async () => {
    const clients = Array.from({ length: 6 }, () => new pg.Client(bouncer.url));
    try {
      await Promise.all(clients.map((client) => client.connect()));
      const pids = await Promise.all(
        clients.map(async (client) => {
          const { rows } = await client.query<{ pid: number }>(
            'SELECT pg_backend_pid() AS pid, pg_sleep(0.05)',
          );
          return rows[0].pid;
        }),
      );
      expect(new Set(pids).size).toBeLessThanOrEqual(2);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('keeps exclusion, fencing order and arrival order, the listener on a session of its own', async () => {
    const options = {
      postgres: { connectionString: bouncer.url, listen: server.url },
      keyPrefix: uniquePrefix(),
    };
    const [a, b] = [await boot(options), await boot(options)];
    const tokens: number[] = [];
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? a : b).locks.using('counter', async (lock) => {
          tokens.push(lock.fencingToken);
          await unsafeIncrement();
        }),
      ),
    );
    const { rows } = await db.query<{ value: number }>('SELECT value FROM counter WHERE id = 1');
    expect(rows[0].value).toBe(30);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(new Set(tokens).size).toBe(30);
    expect(await servedInArrivalOrder(a, b)).toEqual([0, 1, 2, 3]);
  });

  it('takes semaphores, read-write locks and throttles through the bouncer', async () => {
    const options = {
      postgres: { connectionString: bouncer.url, listen: server.url },
      keyPrefix: uniquePrefix(),
    };
    const [a, b] = [await boot(options), await boot(options)];
    const permits = await a.locks.acquire('pool', { limit: 3, permits: 2 });
    expect(await b.locks.tryAcquire('pool', { limit: 3, permits: 2 })).toBeNull();
    const last = await b.locks.acquire('pool', { limit: 3 });
    await Promise.all([permits.release(), last.release()]);
    const reader = await a.locks.acquire('doc', { mode: 'read' });
    expect(await b.locks.tryAcquire('doc', { mode: 'write' })).toBeNull();
    await reader.release();
    const tick = await a.locks.tryAcquire('tick', { holdFor: 300 });
    expect(tick).not.toBeNull();
    await tick!.release();
    expect(await b.locks.tryAcquire('tick')).toBeNull();
    await sleep(400);
    await (await b.locks.acquire('tick')).release();
  });

  it('still serves waiters in arrival order without listen, its LISTEN sent through the transaction pool', async () => {
    const options = { postgres: bouncer.url, keyPrefix: uniquePrefix() };
    const [a, b] = [await boot(options), await boot(options)];
    expect(await servedInArrivalOrder(a, b)).toEqual([0, 1, 2, 3]);
  });
});
