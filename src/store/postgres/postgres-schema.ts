import type { PostgresClient, PostgresPool } from './postgres-client.js';
import { postgresNames, type PostgresNames } from './postgres-names.js';
import { tableNamesOf } from './postgres.options.js';
import { schemaParts } from './postgres-schema.sql.js';
import type { SchemaPart } from './postgres-tables.sql.js';

/**
 * Creates the library's schema, tables, sequence and functions, those that are missing. An
 * instance that finds everything in place (made by a migration, or by another instance) runs
 * no DDL at all, so its role needs no right to create anything. Instances that boot together
 * take turns under a transaction-scoped advisory lock (`CREATE … IF NOT EXISTS` alone is not
 * safe against a concurrent creation of the same object), and each looks again once it has the
 * lock: DDL on tables that other instances already use (an index's, which locks its table)
 * would only stall them, or deadlock with them.
 */
export async function ensureSchema(pool: PostgresPool, names: PostgresNames): Promise<void> {
  const parts = schemaParts(names);
  if ((await missing(pool, parts)).length === 0) return;
  const client = await pool.connect();
  try {
    await client.query({ text: 'BEGIN' });
    await client.query({
      text: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
      values: [`nestjs-redis-lock schema ${names.qualified}`],
    });
    // Opening a catalog table makes this session take in the catalog changes that were
    // committed while it waited (the lock above does not), such as another instance's tables;
    // otherwise the cached "missing" of the check before would stand.
    await client.query({ text: 'SELECT FROM pg_catalog.pg_class LIMIT 0' });
    for (const part of await missing(client, parts)) await client.query({ text: part.sql });
    await client.query({ text: 'COMMIT' });
    client.release();
  } catch (error) {
    await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
    client.release(true);
    throw error;
  }
}

/** The parts of the schema that do not exist yet, in order. */
async function missing(client: PostgresClient, parts: SchemaPart[]): Promise<SchemaPart[]> {
  const { rows } = await client.query<{ exists: boolean[] }>({
    text: `
SELECT array_agg(CASE kind WHEN 'schema' THEN to_regnamespace(object) IS NOT NULL
                           WHEN 'relation' THEN to_regclass(object) IS NOT NULL
                           ELSE to_regprocedure(object) IS NOT NULL END ORDER BY i) AS exists
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS part(object, kind, i)`,
    values: [parts.map((part) => part.object), parts.map((part) => part.kind)],
  });
  const exists = rows[0]?.exists ?? [];
  return parts.filter((_, i) => exists[i] !== true);
}

/**
 * The SQL that creates what the PostgreSQL backend keeps (tables, indexes, the fencing
 * sequence and the functions), for teams whose migrations own the schema: run it once per
 * release of the library that changes it (the functions carry their version in their name).
 * The module then finds everything in place and runs no DDL.
 *
 * @throws LockOptionsError for a schema or table that is not a plain lower-case identifier
 * @example
 * ```ts
 * import { postgresLockSchema } from 'nestjs-redis-lock';
 * await queryRunner.query(postgresLockSchema({ schema: 'app', table: 'locks' }));
 * ```
 */
export function postgresLockSchema(options: { schema?: string; table?: string } = {}): string {
  const { schema, table } = tableNamesOf(options, 'postgresLockSchema');
  const names = postgresNames(schema, table);
  return schemaParts(names)
    .map((part) => part.sql)
    .join('');
}
