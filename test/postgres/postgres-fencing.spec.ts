import pg from 'pg';
import {
  fenceTransaction,
  StaleFencingTokenError,
  type Lock,
  type LockModuleOptions,
} from '../../src/index.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';

/**
 * Fenced writes on PostgreSQL: `writeFenced` into the guard table, and `fenceTransaction`, the
 * guard inside the caller's own transaction, whose row lock orders the transactions of the old
 * and the new holder.
 */
describe('PostgreSQL fenced writes', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  let a: LockApp;
  let b: LockApp;
  let options: LockModuleOptions;

  /** Runs `work` in a transaction of its own connection, committing unless it throws. */
  const inTransaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  };
  const balance = async () =>
    (await pool.query<{ balance: number }>('SELECT balance FROM accounts WHERE id = 1')).rows[0]
      .balance;

  beforeAll(async () => {
    server = await PostgresServer.start();
    pool = new pg.Pool({ connectionString: server.url, max: 4 });
    await pool.query('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
  }, 60_000);

  beforeEach(async () => {
    options = { postgres: server.url, keyPrefix: uniquePrefix() };
    [a, b] = [await bootLockApp(options), await bootLockApp(options)];
    await pool.query(
      'INSERT INTO accounts VALUES (1, 100) ON CONFLICT (id) DO UPDATE SET balance = 100',
    );
  });

  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  /** A holder whose lock expired under it (watchdog off), and the holder that took it over. */
  const staleAndNew = async (key: string): Promise<[Lock, Lock]> => {
    const stale = await a.locks.acquire(key, { ttl: 200, watchdog: false });
    const fresh = await b.locks.acquire(key, { waitTimeout: 5_000 });
    return [stale, fresh];
  };

  it('writeFenced refuses the write of a holder whose token is older than one already written', async () => {
    const [stale, fresh] = await staleAndNew('writer');
    await b.locks.writeFenced('account:1', 'new', fresh.fencingToken);
    const refused = a.locks.writeFenced('account:1', 'old', stale.fencingToken);
    await expect(refused).rejects.toBeInstanceOf(StaleFencingTokenError);
    await expect(refused).rejects.toMatchObject({ highestSeen: fresh.fencingToken });
    const { rows } = await pool.query('SELECT value, fencing_token FROM nestjs_lock_fenced');
    expect(rows).toEqual([{ value: 'new', fencing_token: String(fresh.fencingToken) }]);
    await fresh.release();
  });

  it('fenceTransaction fails the stale holder’s transaction, which then writes nothing', async () => {
    const [stale, fresh] = await staleAndNew('account:1');
    await inTransaction(async (client) => {
      await fenceTransaction(client, fresh);
      await client.query('UPDATE accounts SET balance = balance - 30 WHERE id = 1');
    });
    const refused = inTransaction(async (client) => {
      await fenceTransaction(client, stale);
      await client.query('UPDATE accounts SET balance = balance - 50 WHERE id = 1');
    });
    await expect(refused).rejects.toBeInstanceOf(StaleFencingTokenError);
    expect(await balance()).toBe(70);
    await fresh.release();
  });

  it('orders the old and the new holder’s transactions: the new one waits at its check and reads what the old one committed', async () => {
    const [stale, fresh] = await staleAndNew('account:1');
    // The old holder checked first (its lock was still valid then) and is slow to commit.
    let oldCommitted = false;
    let checked!: () => void;
    const oldChecked = new Promise<void>((resolve) => (checked = resolve));
    const old = inTransaction(async (client) => {
      await fenceTransaction(client, stale);
      checked();
      const read = (await client.query<{ balance: number }>('SELECT balance FROM accounts')).rows;
      await sleep(300);
      await client.query('UPDATE accounts SET balance = $1 WHERE id = 1', [read[0].balance - 10]);
      oldCommitted = true;
    });
    await oldChecked;
    await inTransaction(async (client) => {
      await fenceTransaction(client, fresh);
      expect(oldCommitted).toBe(true);
      const read = (await client.query<{ balance: number }>('SELECT balance FROM accounts')).rows;
      await client.query('UPDATE accounts SET balance = $1 WHERE id = 1', [read[0].balance - 20]);
    });
    await old;
    expect(await balance()).toBe(70);
    await fresh.release();
  });
});
