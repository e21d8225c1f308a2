import { createRequire } from 'node:module';
import { LockOptionsError } from '../../lock.errors.js';

/** One statement with its parameters, as `pg` takes it. */
export interface PostgresQuery {
  text: string;
  values?: unknown[];
}

/** What the store reads of a `pg` result. */
export interface PostgresResult<Row> {
  rows: Row[];
}

/** What the store uses of a `pg` client: a pooled one, or the listener's own. */
export interface PostgresClient {
  query<Row = Record<string, unknown>>(query: PostgresQuery): Promise<PostgresResult<Row>>;
}

/**
 * A `pg` `Pool`, as far as the library uses one: passed in the `postgres` option, it is reused
 * and never ended by the module.
 */
export interface PostgresPool extends PostgresClient {
  connect(): Promise<PostgresClient & { release(error?: Error | boolean): void }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  /** The configuration the pool was made with (`pg-pool` keeps it), for the listener. */
  readonly options?: object;
}

/** The connection that LISTENs: a `pg` `Client` of its own, outside every pool. */
export interface PostgresListenerClient extends PostgresClient {
  connect(): Promise<void>;
  end(): Promise<void>;
  on(
    event: 'notification',
    listener: (message: { channel: string; payload?: string }) => void,
  ): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** What the store uses of the `pg` package. */
export interface PgModule {
  Pool: new (config: object) => PostgresPool;
  Client: new (config: object) => PostgresListenerClient;
}

const PG_PACKAGE = 'pg';

let pgModule: PgModule | undefined;

/**
 * Loads `pg` the first time the `postgres` option is used, so that users of the other backends
 * need not install it.
 * @throws LockOptionsError naming the `postgres` option when the package is missing
 */
export function loadPg(): PgModule {
  if (pgModule) return pgModule;
  try {
    pgModule = createRequire(import.meta.url)(PG_PACKAGE) as PgModule;
  } catch (error) {
    throw new LockOptionsError(
      'postgres',
      '(connection)',
      `the package ${PG_PACKAGE} to be installed beside this library ` +
        `(npm install ${PG_PACKAGE}): the PostgreSQL backend needs it ` +
        `(${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  return pgModule;
}

/** Whether `value` is a pool (a `pg` `Pool` or one like it) rather than its configuration. */
export function isPool(value: unknown): value is PostgresPool {
  const candidate = value as Partial<PostgresPool> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.query === 'function' &&
    typeof candidate.connect === 'function'
  );
}
