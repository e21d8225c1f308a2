import type { Cluster, Redis, RedisOptions } from 'ioredis';
import {
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_KEY_PREFIX,
  DEFAULT_REDIS_URL,
  DEFAULT_TTL,
  DEFAULT_WAIT_TIMEOUT,
  MAX_TIMER_MS,
  MIN_TTL,
} from './lock.constants.js';
import { LockOptionsError } from './lock.errors.js';

/**
 * Options of {@link LockModule.forRoot} (and what a `forRootAsync` factory returns).
 */
export interface LockModuleOptions {
  /**
   * Where the locks live: a `redis://` / `rediss://` URL, ioredis options, or an ioredis
   * `Redis` / `Cluster` client. A client passed in is reused and never closed by the module;
   * a client the module creates from a URL or options is closed on shutdown.
   * Default: `redis://127.0.0.1:6379`.
   */
  redis?: string | RedisOptions | Redis | Cluster;
  /** Prepended to every key. Default `'lock:'`. Must not contain `{` or `}`. */
  keyPrefix?: string;
  /** Lock time-to-live in ms. Default 30 000. */
  ttl?: number;
  /** How long `acquire()` waits for a held lock by default, in ms (`Infinity` allowed). Default 10 000. */
  waitTimeout?: number;
  /** Renew held locks every `ttl / 3` while they are held. Default `true`. */
  watchdog?: boolean;
  /**
   * Serve waiters first come, first served across all processes: a waiter takes a place in a
   * queue kept in the store beside the lock, and a released lock is handed straight to the
   * longest-waiting live waiter. With `false`, waiters race for a released lock (each process
   * still serves its own callers in order). Default `true`.
   */
  fair?: boolean;
  /**
   * Where locks live: `'redis'` (the default), or `'memory'`, a store inside this process with
   * the same semantics that is NOT distributed, for single-instance apps and unit tests. With
   * `'memory'`, leave `redis` unset.
   */
  store?: 'redis' | 'memory';
  /** Longest wait for one Redis round trip before it counts as a connection failure, in ms. Default 5 000. */
  commandTimeout?: number;
}

/** Options of one acquisition; each overrides the module's default. */
export interface AcquireOptions {
  /** Lock time-to-live in ms. */
  ttl?: number;
  /** How long to wait for a held lock, in ms; `0` fails at once, `Infinity` waits forever. */
  waitTimeout?: number;
  /** Renew the lock every `ttl / 3` while it is held. */
  watchdog?: boolean;
}

/** Module options after validation, with every default filled in. */
export interface ResolvedLockOptions {
  store: 'redis' | 'memory';
  fair: boolean;
  redis: string | RedisOptions | Redis | Cluster;
  keyPrefix: string;
  ttl: number;
  waitTimeout: number;
  watchdog: boolean;
  commandTimeout: number;
}

/** Per-acquisition options after validation. */
export type ResolvedAcquireOptions = Pick<ResolvedLockOptions, 'ttl' | 'waitTimeout' | 'watchdog'>;

const MODULE_OPTION_NAMES = new Set([
  'redis',
  'keyPrefix',
  'ttl',
  'waitTimeout',
  'watchdog',
  'commandTimeout',
  'store',
  'fair',
  'isGlobal',
]);
const ACQUIRE_OPTION_NAMES = new Set(['ttl', 'waitTimeout', 'watchdog']);

/**
 * Validates module options and fills in defaults.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveModuleOptions(options: LockModuleOptions | undefined): ResolvedLockOptions {
  const given = requireObject('options', options ?? {});
  rejectUnknown(given, MODULE_OPTION_NAMES);
  const store = given.store ?? 'redis';
  if (store !== 'redis' && store !== 'memory') {
    throw new LockOptionsError('store', store, `'redis' or 'memory'`);
  }
  if (store === 'memory' && given.redis !== undefined) {
    throw new LockOptionsError('redis', given.redis, `nothing with store: 'memory'`);
  }
  return {
    store,
    fair: checkBoolean('fair', given.fair ?? true),
    redis: resolveRedis(given.redis),
    keyPrefix: resolveKeyPrefix(given.keyPrefix),
    ttl: checkTtl('ttl', given.ttl ?? DEFAULT_TTL),
    waitTimeout: checkDuration('waitTimeout', given.waitTimeout ?? DEFAULT_WAIT_TIMEOUT, 0, true),
    watchdog: checkBoolean('watchdog', given.watchdog ?? true),
    commandTimeout: checkDuration(
      'commandTimeout',
      given.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT,
      1,
      false,
    ),
  };
}

/**
 * Validates the options of one acquisition against the given defaults; `where` names the
 * caller (e.g. a decorated method) in error messages.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: ResolvedAcquireOptions,
  where?: string,
): ResolvedAcquireOptions {
  if (options === undefined) return defaults;
  const given = requireObject('options', options, where);
  rejectUnknown(given, ACQUIRE_OPTION_NAMES, where);
  return {
    ttl: given.ttl === undefined ? defaults.ttl : checkTtl('ttl', given.ttl, where),
    waitTimeout:
      given.waitTimeout === undefined
        ? defaults.waitTimeout
        : checkDuration('waitTimeout', given.waitTimeout, 0, true, where),
    watchdog:
      given.watchdog === undefined
        ? defaults.watchdog
        : checkBoolean('watchdog', given.watchdog, where),
  };
}

/** A TTL: an integer number of milliseconds between {@link MIN_TTL} and the timer limit. */
export function checkTtl(name: string, value: unknown, where?: string): number {
  return checkDuration(name, value, MIN_TTL, false, where);
}

function checkDuration(
  name: string,
  value: unknown,
  min: number,
  infinite: boolean,
  where?: string,
): number {
  if (infinite && value === Infinity) return value;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < min ||
    value > MAX_TIMER_MS
  ) {
    throw new LockOptionsError(
      name,
      value,
      `an integer number of milliseconds from ${min} to ${MAX_TIMER_MS}${infinite ? ', or Infinity' : ''}`,
      where,
    );
  }
  return value;
}

function checkBoolean(name: string, value: unknown, where?: string): boolean {
  if (typeof value !== 'boolean') throw new LockOptionsError(name, value, 'a boolean', where);
  return value;
}

function requireObject(name: string, value: unknown, where?: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError(name, value, 'an object', where);
  }
  return value as Record<string, unknown>;
}

function rejectUnknown(given: Record<string, unknown>, known: Set<string>, where?: string): void {
  for (const name of Object.keys(given)) {
    if (!known.has(name)) {
      throw new LockOptionsError(
        name,
        given[name],
        `no such option (known: ${[...known].join(', ')})`,
        where,
      );
    }
  }
}

function resolveKeyPrefix(value: unknown): string {
  const prefix = value ?? DEFAULT_KEY_PREFIX;
  if (
    typeof prefix !== 'string' ||
    prefix.length === 0 ||
    prefix.length > 256 ||
    /[{}]/.test(prefix)
  ) {
    throw new LockOptionsError(
      'keyPrefix',
      prefix,
      'a non-empty string of at most 256 characters without "{" or "}" (the library sets hash tags itself)',
    );
  }
  return prefix;
}

function resolveRedis(value: unknown): ResolvedLockOptions['redis'] {
  if (value === undefined) return DEFAULT_REDIS_URL;
  if (typeof value === 'string') {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || !url.hostname) {
      throw new LockOptionsError('redis', value, 'a URL such as "redis://host:6379/0"');
    }
    if (url.pathname.length > 1 && !/^\/\d+$/.test(url.pathname)) {
      throw new LockOptionsError('redis', value, 'a URL whose path is a database number');
    }
    return value;
  }
  if (isRedisClient(value)) return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return value as RedisOptions;
  }
  throw new LockOptionsError(
    'redis',
    value,
    'a redis:// URL, ioredis options, or an ioredis client',
  );
}

/** Tells an ioredis `Redis` or `Cluster` instance from a plain options object. */
export function isRedisClient(value: unknown): value is Redis | Cluster {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Redis).evalsha === 'function' &&
    typeof (value as Redis).duplicate === 'function'
  );
}
