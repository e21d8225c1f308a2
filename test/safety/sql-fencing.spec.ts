import pg from 'pg';
import {
  bootLockApp,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';

/**
 * The SQL pattern from the README, against a real PostgreSQL: the row keeps the highest
 * fencing token it has accepted, and the UPDATE refuses an older one in its WHERE clause.
 */
describe('fencing tokens guarding a SQL row', () => {
  const prefix = uniquePrefix();
  let postgres: PostgresServer;
  let db: pg.Client;
  let first: LockApp;
  let second: LockApp;

  const fencedUpdate = async (balance: number, fencingToken: number) => {
    const result = await db.query(
      'UPDATE accounts SET balance = $1, fence = $2 WHERE id = 1 AND fence <= $2',
      [balance, fencingToken],
    );
    return result.rowCount;
  };

  beforeAll(async () => {
    postgres = await PostgresServer.start();
    db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    await db.query(
      'CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL, fence bigint NOT NULL DEFAULT 0)',
    );
    await db.query('INSERT INTO accounts (id, balance) VALUES (1, 100)');
    first = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
    second = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
  });

  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
    await db?.end();
    await postgres?.stop();
  });

  it('refuses the update of a holder whose lock expired and was taken over', async () => {
    // The first holder reads the balance, then pauses past its TTL.
    const stale = await first.locks.acquire('account:1', { ttl: 100, watchdog: false });
    const { rows } = await db.query<{ balance: number }>(
      'SELECT balance FROM accounts WHERE id = 1',
    );
    await sleep(150);
    // Meanwhile a second holder takes the lock and withdraws 30.
    const fresh = await second.locks.acquire('account:1');
    expect(await fencedUpdate(70, fresh.fencingToken)).toBe(1);
    await fresh.release();
    // The first holder wakes up and writes what it computed before the pause: refused.
    expect(await fencedUpdate(Number(rows[0].balance) - 10, stale.fencingToken)).toBe(0);
    const after = await db.query('SELECT balance, fence FROM accounts WHERE id = 1');
    expect(after.rows[0]).toEqual({ balance: 70, fence: String(fresh.fencingToken) });
  });
});
