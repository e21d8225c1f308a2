/**
 * The PostgreSQL mode's look at the lock behind the library's back: a pool of the checker's own
 * that reads the holders' rows (a killed holder's expiry, on the database's clock), tells
 * whether a holder's row is still there, terminates a worker's connections, and finds what a
 * run left in the tables.
 */
import pg from 'pg';

export class PostgresProbe {
  /** @param {string} url */
  constructor(url) {
    this.pool = new pg.Pool({ connectionString: url, max: 2 });
    // Its connections break when the checker restarts the server: the next query opens new ones.
    this.pool.on('error', () => undefined);
  }

  /**
   * How many ms the row of `token` on `key` has left, read now (0 when it is gone).
   * @param {string} key
   * @param {string} token
   */
  async msLeft(key, token) {
    const { rows } = await this.pool.query(
      `SELECT extract(epoch FROM expires_at - clock_timestamp()) * 1000 AS left
         FROM nestjs_lock WHERE key = $1 AND token = $2`,
      [key, token],
    );
    const row = /** @type {{ left: string }[]} */ (rows)[0];
    return row === undefined ? 0 : Math.max(0, Number(row.left));
  }

  /**
   * Whether `token` still has a live row.
   * @param {string} token
   */
  async holds(token) {
    const { rows } = await this.pool.query(
      'SELECT 1 FROM nestjs_lock WHERE token = $1 AND expires_at > clock_timestamp()',
      [token],
    );
    return rows.length > 0;
  }

  /**
   * Terminates every connection whose application_name is `name`; how many it ended.
   * @param {string} name
   */
  async terminate(name) {
    const { rows } = await this.pool.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [name],
    );
    return rows.length;
  }

  /**
   * The rows of keys under `prefix` (holders and waiters), which are then deleted.
   * @param {string} prefix
   */
  async takeLeft(prefix) {
    const { rows } = await this.pool.query(
      `WITH h AS (DELETE FROM nestjs_lock WHERE starts_with(key, $1) RETURNING key),
            q AS (DELETE FROM nestjs_lock_queue WHERE starts_with(key, $1) RETURNING key)
       SELECT 'holder ' || key AS row FROM h UNION ALL SELECT 'waiter ' || key FROM q`,
      [prefix],
    );
    return rows.map((/** @type {{ row: string }} */ { row }) => row);
  }

  close() {
    return this.pool.end();
  }
}
