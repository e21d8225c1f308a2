import { LockOptionsError, StaleFencingTokenError } from '../../lock.errors.js';
import type { Lock } from '../../lock.js';
import type { FencedWriteOutcome } from '../lock-store.interface.js';
import type { PostgresClient } from './postgres-client.js';
import { postgresNames, type PostgresNames } from './postgres-names.js';
import { tableNamesOf } from './postgres.options.js';

/**
 * Records `fencingToken` in the guard row of `resource` unless a higher one is there, and
 * returns the highest token seen when it is refused. The row stays locked until the
 * transaction that runs the statement ends, so a newer holder's check waits for it.
 */
async function guard(
  client: PostgresClient,
  names: PostgresNames,
  resource: string,
  fencingToken: number,
  value: { value: string; ttl: number } | undefined,
): Promise<FencedWriteOutcome> {
  const { rows } = await client.query<{ written: boolean; highest: string }>({
    text: `
WITH written AS (
  INSERT INTO ${names.fenced} AS guard (resource, fencing_token, value, expires_at)
  VALUES ($1, $2, $3, CASE WHEN $4::bigint > 0
                           THEN clock_timestamp() + $4::bigint * interval '1 millisecond' END)
  ON CONFLICT (resource) DO UPDATE
    SET fencing_token = excluded.fencing_token,
        value = CASE WHEN $5 THEN excluded.value ELSE guard.value END,
        expires_at = CASE WHEN $5 THEN excluded.expires_at ELSE guard.expires_at END
    WHERE guard.fencing_token <= excluded.fencing_token
  RETURNING 1
)
SELECT EXISTS (SELECT FROM written) AS written,
       (SELECT fencing_token FROM ${names.fenced} WHERE resource = $1)::text AS highest`,
    values: [resource, fencingToken, value?.value ?? null, value?.ttl ?? 0, value !== undefined],
  });
  const [row] = rows;
  if (row?.written) return { written: true };
  return { written: false, highestSeen: Number(row?.highest ?? 0) };
}

/** `LockService.writeFenced` on PostgreSQL: the value beside its guard, in one statement. */
export function writeFencedRow(
  client: PostgresClient,
  names: PostgresNames,
  write: { resource: string; value: string; fencingToken: number; ttl: number },
): Promise<FencedWriteOutcome> {
  const { resource, value, fencingToken, ttl } = write;
  return guard(client, names, resource, fencingToken, { value, ttl });
}

/** Where {@link fenceTransaction} keeps its guard rows, and under which resource. */
export interface FenceTransactionOptions {
  /** The guarded resource. Default: the lock's key. */
  resource?: string;
  /** The `postgres.schema` and `postgres.table` of the module. Defaults `'public'`, `'nestjs_lock'`. */
  schema?: string;
  table?: string;
}

/**
 * A fenced write inside your own transaction: checks that `lock`'s fencing token is at least
 * the highest one recorded for the resource, and records it, in the guard table of the
 * PostgreSQL backend (`<table>_fenced`). Call it first in the transaction, before you read what
 * you will write: the guard row stays locked until your transaction commits or rolls back, so a
 * newer holder's transaction waits at its own check and then sees your writes, and a stale
 * holder's transaction fails here and writes nothing. Works with any backend's locks, as long
 * as the tables exist (a module on PostgreSQL creates them, or see `postgresLockSchema`).
 *
 * @example
 * ```ts
 * await locks.using(`account:${id}`, async (lock) => {
 *   const client = await pool.connect();
 *   try {
 *     await client.query('BEGIN');
 *     await fenceTransaction(client, lock); // throws StaleFencingTokenError for a stale holder
 *     await client.query('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [amount, id]);
 *     await client.query('COMMIT');
 *   } catch (error) {
 *     await client.query('ROLLBACK');
 *     throw error;
 *   } finally {
 *     client.release();
 *   }
 * });
 * ```
 * @param client a `pg` client (or `PoolClient`) inside a transaction (after `BEGIN`)
 * @throws StaleFencingTokenError when a newer holder has already presented a higher token
 */
export async function fenceTransaction(
  client: PostgresClient,
  lock: Pick<Lock, 'key' | 'fencingToken'>,
  options: FenceTransactionOptions = {},
): Promise<void> {
  const { schema, table } = tableNamesOf(options, 'fenceTransaction');
  const resource = options.resource ?? lock.key;
  if (typeof resource !== 'string' || resource.length === 0 || resource.includes('\0')) {
    throw new LockOptionsError('resource', resource, 'a non-empty string without NUL');
  }
  const { fencingToken } = lock;
  if (!Number.isSafeInteger(fencingToken) || fencingToken <= 0) {
    throw new LockOptionsError('fencingToken', fencingToken, 'a fencing token from a Lock');
  }
  const outcome = await guard(
    client,
    postgresNames(schema, table),
    resource,
    fencingToken,
    undefined,
  );
  if (!outcome.written) {
    throw new StaleFencingTokenError(resource, fencingToken, outcome.highestSeen);
  }
}
