import { LockOptionsError } from '../../lock.errors.js';
import { isPool, type PostgresPool } from './postgres-client.js';

export type { PostgresPool } from './postgres-client.js';

/**
 * A PostgreSQL database for the locks (the `postgres` module option, in its long form): the
 * fields of a `pg` `PoolConfig` for the pool the module makes (or `pool`, one of yours), and
 * where the library's tables live.
 */
export interface PostgresOptions {
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  database?: string;
  /** Any other field of `pg`'s `PoolConfig` (`password`, `ssl`, `max`, …). */
  [option: string]: unknown;
  /** A pool of yours to use instead of one made from the fields above: never ended by the module. */
  pool?: PostgresPool;
  /** The schema of the library's tables. Default `'public'`. */
  schema?: string;
  /**
   * The name of the holders' table; the others are named after it (`<table>_queue`,
   * `<table>_fenced`, the sequence `<table>_fence`, functions `<table>_acquire_v2`, …).
   * Default `'nestjs_lock'`.
   */
  table?: string;
  /**
   * Where the connection that LISTENs for releases connects, when it must differ from the
   * pool's: behind PgBouncer in transaction mode, LISTEN needs a session, so give the database
   * itself (or a session-mode pool) here. A URL or the fields of a `pg` `ClientConfig`.
   * Default: the pool's own configuration.
   */
  listen?: string | Record<string, unknown>;
}

/** The PostgreSQL backend's options, once validated. */
export interface ResolvedPostgres {
  /** The pool you passed, reused and never ended; otherwise `config` makes one. */
  pool?: PostgresPool;
  config?: Record<string, unknown>;
  /** The listener's configuration, when it is not the pool's. */
  listen?: Record<string, unknown>;
  schema: string;
  table: string;
}

/** Module options that PostgreSQL has no use for, and why. */
const REFUSED_WITH_POSTGRES: Record<string, string> = {
  redis: 'nothing with postgres: the locks live in PostgreSQL',
  zookeeper: 'nothing with postgres: the locks live in PostgreSQL',
  store: 'nothing with postgres',
  memorySpace: 'nothing with postgres',
  nodeTimeout: 'nothing with postgres: it applies to RedLock only',
  waitForReplicas:
    'nothing with postgres: use synchronous_commit and synchronous_standby_names on the server',
};

const OWN_FIELDS = new Set(['pool', 'schema', 'table', 'listen']);
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Room for the longest suffix of a derived name (`_queue_lease`) within 63 bytes. */
const MAX_TABLE = 40;

/**
 * Validates the `postgres` module option and what the other options must be beside it.
 * @throws LockOptionsError naming the first option PostgreSQL cannot honour
 */
export function resolvePostgres(given: Record<string, unknown>): ResolvedPostgres {
  for (const [name, expected] of Object.entries(REFUSED_WITH_POSTGRES)) {
    if (given[name] !== undefined) throw new LockOptionsError(name, given[name], expected);
  }
  const value = given.postgres;
  if (typeof value === 'string')
    return { config: connectionOf('postgres', value), ...tableNamesOf({}) };
  if (isPool(value)) return { pool: value, ...tableNamesOf({}) };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError(
      'postgres',
      value,
      'a postgres:// URL, the fields of a pg PoolConfig, or a pg Pool',
    );
  }
  const options = value as Record<string, unknown>;
  const config = Object.fromEntries(Object.entries(options).filter(([k]) => !OWN_FIELDS.has(k)));
  if (options.pool !== undefined && !isPool(options.pool)) {
    throw new LockOptionsError('postgres.pool', options.pool, 'a pg Pool');
  }
  if (options.pool !== undefined && Object.keys(config).length > 0) {
    throw new LockOptionsError(
      'postgres.pool',
      '(a pool)',
      `a pool or connection fields, not both (also given: ${Object.keys(config).join(', ')})`,
    );
  }
  const listen = options.listen;
  return {
    ...(options.pool ? { pool: options.pool } : { config }),
    ...(listen === undefined ? {} : { listen: listenerOf(listen) }),
    ...tableNamesOf(options),
  };
}

/**
 * The schema and table that `options` name, or the defaults (`public`, `nestjs_lock`).
 * @param where who was given them, for the error (default: the module's `postgres` option)
 * @throws LockOptionsError for a name that is not a plain lower-case identifier
 */
export function tableNamesOf(
  options: { schema?: unknown; table?: unknown },
  where?: string,
): { schema: string; table: string } {
  const prefix = where === undefined ? 'postgres.' : '';
  return {
    schema: identifier(`${prefix}schema`, options.schema ?? 'public', 63, where),
    table: identifier(`${prefix}table`, options.table ?? 'nestjs_lock', MAX_TABLE, where),
  };
}

function identifier(option: string, value: unknown, max: number, where?: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value) || value.length > max) {
    throw new LockOptionsError(
      option,
      value,
      `an identifier of lower-case letters, digits and "_" (not first a digit), at most ${max} characters`,
      where,
    );
  }
  return value;
}

function listenerOf(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return connectionOf('postgres.listen', value);
  if (typeof value !== 'object' || value === null || Array.isArray(value) || isPool(value)) {
    throw new LockOptionsError(
      'postgres.listen',
      value,
      'a postgres:// URL or the fields of a pg ClientConfig (not a pool: LISTEN needs a session of its own)',
    );
  }
  return value as Record<string, unknown>;
}

function connectionOf(option: string, url: string): Record<string, unknown> {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new LockOptionsError(option, url, 'a postgres:// or postgresql:// URL');
  }
  return { connectionString: url };
}

/** Where a configuration connects, without credentials, for the boot line. */
export function addressOfPostgres(postgres: ResolvedPostgres): string {
  const config = postgres.config ?? (postgres.pool?.options as Record<string, unknown>) ?? {};
  const url = typeof config.connectionString === 'string' ? config.connectionString : undefined;
  if (url) {
    try {
      const parsed = new URL(url);
      return `${parsed.hostname || 'localhost'}:${parsed.port || 5432}${parsed.pathname}`;
    } catch {
      return '(a connection string)';
    }
  }
  const host = typeof config.host === 'string' ? config.host : 'localhost';
  const port =
    typeof config.port === 'number' || typeof config.port === 'string' ? config.port : 5432;
  const database = typeof config.database === 'string' ? `/${config.database}` : '';
  return `${host}:${port}${database}`;
}
