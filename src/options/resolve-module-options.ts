import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import {
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_DRIFT_FACTOR,
  DEFAULT_NODE_TIMEOUT,
  DEFAULT_KEY_PREFIX,
  DEFAULT_REDIS_URL,
  DEFAULT_TTL,
  DEFAULT_WAIT_TIMEOUT,
  MAX_TIMER_MS,
  MIN_TTL,
} from '../lock.constants.js';
import { LockOptionsError } from '../lock.errors.js';

/** One Redis server: a `redis://` / `rediss://` URL, ioredis options, or an ioredis client. */
export type RedisServerConfig = string | RedisOptions | Redis;

/** A Redis Cluster for the module to connect to: its startup nodes and ioredis options. */
export interface RedisClusterConfig {
  cluster: ClusterNode[];
  clusterOptions?: ClusterOptions;
}

/**
 * Options of {@link LockModule.forRoot} (and what a `forRootAsync` factory returns).
 */
export interface LockModuleOptions {
  /**
   * Where the locks live:
   * - one Redis: a `redis://` / `rediss://` URL, ioredis options, or an ioredis `Redis`
   *   client. ioredis options with `sentinels` and `name` follow a Sentinel-managed master.
   * - Redis Cluster: an ioredis `Cluster` client, or `{ cluster: nodes, clusterOptions? }`.
   * - RedLock: an array of at least 3 independent masters (URLs, options or clients). A lock
   *   is held when a majority of them granted it within its validity.
   *
   * A client passed in is reused and never closed by the module; a client the module creates
   * connects on its first command (so that a failed boot leaves no connection open) and is
   * closed on shutdown. Default: `redis://127.0.0.1:6379`.
   */
  redis?: RedisServerConfig | Cluster | RedisClusterConfig | RedisServerConfig[];
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
  /**
   * RedLock only: longest wait for one master's answer, in ms, far below the TTL, so that a
   * slow or dead master costs an acquisition no more than this. Default 250.
   */
  nodeTimeout?: number;
  /**
   * The share of a TTL by which the library's idea of a lock's validity undercuts Redis's, to
   * allow for clock drift between this process and Redis (plus 2 ms). Default 0.01.
   */
  driftFactor?: number;
  /**
   * One Redis (or Sentinel) only: after each acquisition or renewal, wait with `WAIT` until
   * `replicas` replicas acknowledged it, for at most `timeout` ms. Fails closed: an acquisition
   * that too few replicas acknowledged is undone and rejects with `LockReplicationError`; a
   * renewal that they did not acknowledge does not count. Default: off.
   */
  waitForReplicas?: { replicas: number; timeout: number };
}

/** Options of one acquisition; each overrides the module's default. */
export interface AcquireOptions {
  /** Lock time-to-live in ms. */
  ttl?: number;
  /** How long to wait for a held lock, in ms; `0` fails at once, `Infinity` waits forever. */
  waitTimeout?: number;
  /** Renew the lock every `ttl / 3` while it is held. */
  watchdog?: boolean;
  /**
   * Throttle mode: when the work ends (`using`, `@WithLock`) or the lock is released, it is not
   * deleted but left to expire `holdFor` ms after it was taken (or deleted at once if that
   * moment has passed). Meanwhile callers that use `holdFor` too get a throttled
   * `LockNotAcquiredError` (`429 Too Many Requests` over HTTP) with the window's remaining time.
   */
  holdFor?: number;
  /**
   * Abandons the wait when aborted: the caller leaves the queue at once and the call rejects
   * with the signal's reason (also when it was aborted before the call). A lock acquired just
   * as it aborts is given back. Once the lock is held, the signal has no effect.
   */
  signal?: AbortSignal;
}

/** Where the locks live, once validated. */
export type ResolvedRedis =
  | { topology: 'single'; config: RedisServerConfig }
  | { topology: 'cluster'; config: Cluster | RedisClusterConfig }
  | { topology: 'redlock'; nodes: RedisServerConfig[] };

/** Module options after validation, with every default filled in. */
export interface ResolvedLockOptions {
  store: 'redis' | 'memory';
  fair: boolean;
  redis: ResolvedRedis;
  keyPrefix: string;
  ttl: number;
  waitTimeout: number;
  watchdog: boolean;
  commandTimeout: number;
  nodeTimeout: number;
  driftFactor: number;
  waitForReplicas?: { replicas: number; timeout: number };
}

/** Per-acquisition options after validation. */
export type ResolvedAcquireOptions = Pick<
  ResolvedLockOptions,
  'ttl' | 'waitTimeout' | 'watchdog'
> & {
  holdFor?: number;
  signal?: AbortSignal;
};

const MODULE_OPTION_NAMES = new Set([
  'redis',
  'keyPrefix',
  'ttl',
  'waitTimeout',
  'watchdog',
  'commandTimeout',
  'store',
  'fair',
  'nodeTimeout',
  'driftFactor',
  'waitForReplicas',
  'isGlobal',
]);
const ACQUIRE_OPTION_NAMES = new Set(['ttl', 'waitTimeout', 'watchdog', 'holdFor', 'signal']);
/**
 * How late Redis may answer a WAIT whose timeout ran out, in ms: it checks blocked clients on
 * its periodic tick (10 a second by default), plus a round trip.
 */
const WAIT_SLACK = 150;

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
  const redis = resolveRedis(given.redis);
  const redlock = redis.topology === 'redlock';
  if (given.nodeTimeout !== undefined && !redlock) {
    throw new LockOptionsError(
      'nodeTimeout',
      given.nodeTimeout,
      'nothing: it applies to RedLock only (redis: an array of masters)',
    );
  }
  if (given.commandTimeout !== undefined && redlock) {
    throw new LockOptionsError(
      'commandTimeout',
      given.commandTimeout,
      'nothing with RedLock, where nodeTimeout bounds each master instead',
    );
  }
  if (redlock && given.fair === true) {
    // Fair hand-over needs one queue that orders the waiters; N masters would order them
    // differently and split the votes.
    throw new LockOptionsError(
      'fair',
      given.fair,
      'false or nothing with RedLock (redis: an array): waiters are not queued across masters',
    );
  }
  const ttl = checkTtl('ttl', given.ttl ?? DEFAULT_TTL);
  const commandTimeout = checkDuration(
    'commandTimeout',
    given.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT,
    1,
    false,
  );
  const nodeTimeout = checkDuration(
    'nodeTimeout',
    given.nodeTimeout ?? DEFAULT_NODE_TIMEOUT,
    1,
    false,
  );
  if (redlock && nodeTimeout * 2 > ttl) {
    // A majority's answers must come in with validity to spare.
    throw new LockOptionsError(
      'nodeTimeout',
      nodeTimeout,
      `at most half the ttl (${ttl} ms), and better far below it` +
        (given.nodeTimeout === undefined ? '; this is its default: set nodeTimeout lower' : ''),
    );
  }
  return {
    store,
    fair: checkBoolean('fair', given.fair ?? !redlock),
    redis,
    keyPrefix: resolveKeyPrefix(given.keyPrefix),
    ttl,
    waitTimeout: checkDuration('waitTimeout', given.waitTimeout ?? DEFAULT_WAIT_TIMEOUT, 0, true),
    watchdog: checkBoolean('watchdog', given.watchdog ?? true),
    commandTimeout,
    nodeTimeout,
    driftFactor: resolveDriftFactor(given.driftFactor),
    waitForReplicas: resolveWaitForReplicas(
      given.waitForReplicas,
      store,
      redis,
      commandTimeout,
      ttl,
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
    holdFor: given.holdFor === undefined ? undefined : checkTtl('holdFor', given.holdFor, where),
    signal: given.signal === undefined ? undefined : checkSignal(given.signal, where),
  };
}

function checkSignal(value: unknown, where?: string): AbortSignal {
  if (!(value instanceof AbortSignal)) {
    throw new LockOptionsError('signal', value, 'an AbortSignal', where);
  }
  return value;
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

function resolveDriftFactor(value: unknown): number {
  const factor = value ?? DEFAULT_DRIFT_FACTOR;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 0 || factor >= 0.5) {
    throw new LockOptionsError('driftFactor', factor, 'a number from 0 to below 0.5');
  }
  return factor;
}

function resolveWaitForReplicas(
  value: unknown,
  store: ResolvedLockOptions['store'],
  redis: ResolvedRedis,
  commandTimeout: number,
  ttl: number,
): ResolvedLockOptions['waitForReplicas'] {
  if (value === undefined) return undefined;
  if (store === 'memory' || redis.topology !== 'single') {
    throw new LockOptionsError(
      'waitForReplicas',
      value,
      'nothing: it applies to one Redis or a Sentinel-managed master only',
    );
  }
  const given = requireObject('waitForReplicas', value);
  rejectUnknown(given, new Set(['replicas', 'timeout']), 'waitForReplicas');
  const replicas = given.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new LockOptionsError('waitForReplicas.replicas', replicas, 'an integer of at least 1');
  }
  // WAIT's timeout 0 means "forever", which would hang an acquisition with no replica.
  const timeout = checkDuration('waitForReplicas.timeout', given.timeout, 1, false);
  // A caller may wait for a WAIT on its way and then for the next one (they are shared): both
  // must fit in commandTimeout, or a WAIT that runs out looks like Redis not answering. And a
  // WAIT must not outlast the lock it waits for.
  // Redis notices a WAIT's timeout on its next tick, up to WAIT_SLACK late.
  const limit = Math.min(Math.floor(commandTimeout / 2) - WAIT_SLACK, ttl - 1);
  if (timeout > limit) {
    throw new LockOptionsError(
      'waitForReplicas.timeout',
      timeout,
      `at most ${limit} ms (two WAITs, each up to ${WAIT_SLACK} ms late, within ` +
        `commandTimeout, ${commandTimeout} ms, and below the ttl, ${ttl} ms)`,
    );
  }
  return { replicas, timeout };
}

function resolveRedis(value: unknown): ResolvedRedis {
  if (value === undefined) return { topology: 'single', config: DEFAULT_REDIS_URL };
  if (Array.isArray(value)) return { topology: 'redlock', nodes: resolveRedlockNodes(value) };
  if (isClusterClient(value)) return { topology: 'cluster', config: checkClusterPrefix(value) };
  if (isClusterConfig(value)) {
    if (!Array.isArray(value.cluster) || value.cluster.length === 0) {
      throw new LockOptionsError('redis.cluster', value.cluster, 'a non-empty array of nodes');
    }
    rejectUnknown(value, new Set(['cluster', 'clusterOptions']), 'redis');
    const clusterOptions = value.clusterOptions ?? {};
    if (!isRecord(clusterOptions)) {
      throw new LockOptionsError('redis.clusterOptions', clusterOptions, 'ioredis ClusterOptions');
    }
    const prefix =
      clusterOptions.keyPrefix ??
      (clusterOptions.redisOptions as RedisOptions | undefined)?.keyPrefix;
    if (prefix) throw clusterPrefixError(prefix);
    return { topology: 'cluster', config: value as unknown as RedisClusterConfig };
  }
  return { topology: 'single', config: resolveServer('redis', value) };
}

/** One server of a single-Redis or RedLock configuration. */
function resolveServer(name: string, value: unknown): RedisServerConfig {
  const master = name !== 'redis';
  if (typeof value === 'string') return checkUrl(name, value);
  if (master && (isClusterClient(value) || isClusterConfig(value))) {
    // Not the value itself: its options may hold a password.
    throw new LockOptionsError(name, 'a Cluster', 'a single Redis master here, not a Cluster');
  }
  if (isRedisClient(value)) return value as Redis;
  if (isRecord(value)) {
    if (value.sentinels !== undefined) checkSentinels(name, value);
    return value as RedisOptions;
  }
  throw new LockOptionsError(
    name,
    value,
    master
      ? 'a redis:// URL, ioredis options or an ioredis client'
      : 'a redis:// URL, ioredis options, an ioredis client, a Cluster, or an array of masters',
  );
}

function resolveRedlockNodes(values: unknown[]): RedisServerConfig[] {
  if (values.length < 3) {
    throw new LockOptionsError(
      'redis',
      values.map((value) => (typeof value === 'string' ? withoutPassword(value) : 'a server')),
      'at least 3 masters for RedLock (fewer tolerate no failure; use a single Redis instead)',
    );
  }
  const seen = new Set<string>();
  return values.map((value, i) => {
    const node = resolveServer(`redis[${i}]`, value);
    const address = addressOf(node);
    if (seen.has(address)) {
      throw new LockOptionsError(
        `redis[${i}]`,
        address,
        `a master not listed before (${address} is), as RedLock needs independent masters`,
      );
    }
    seen.add(address);
    return node;
  });
}

function checkUrl(name: string, value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || !url.hostname) {
    throw new LockOptionsError(name, withoutPassword(value), 'a URL such as "redis://host:6379/0"');
  }
  if (url.pathname.length > 1 && !/^\/\d+$/.test(url.pathname)) {
    throw new LockOptionsError(
      name,
      withoutPassword(value),
      'a URL whose path is a database number',
    );
  }
  return value;
}

/** Errors are logged: a URL they show must not carry its password (or anything like one). */
function withoutPassword(value: string): string {
  const start = value.indexOf('://') + 3;
  const at = value.lastIndexOf('@');
  return start >= 3 && at > start ? `${value.slice(0, start)}***${value.slice(at)}` : value;
}

function checkSentinels(name: string, options: Record<string, unknown>): void {
  const { sentinels, name: masterName } = options;
  if (!Array.isArray(sentinels) || sentinels.length === 0 || !sentinels.every(isRecord)) {
    throw new LockOptionsError(
      `${name}.sentinels`,
      sentinels,
      'a non-empty array of { host, port }',
    );
  }
  if (typeof masterName !== 'string' || masterName.length === 0) {
    throw new LockOptionsError(
      `${name}.name`,
      masterName,
      'the name of the master the sentinels monitor, e.g. "mymaster"',
    );
  }
}

/**
 * ioredis prefixes the keys of a command, so a lock key and its side keys, which share a hash
 * tag before the prefix, would land in different slots of a Cluster.
 */
function checkClusterPrefix(cluster: Cluster): Cluster {
  const prefix = cluster.options.keyPrefix ?? cluster.options.redisOptions?.keyPrefix;
  if (prefix) throw clusterPrefixError(prefix);
  return cluster;
}

function clusterPrefixError(prefix: unknown): LockOptionsError {
  return new LockOptionsError(
    'redis',
    prefix,
    'a Cluster client without an ioredis keyPrefix, which would move the keys of one lock ' +
      'into different hash slots (use the module keyPrefix option instead)',
  );
}

/**
 * `host:port` of a server (or the Sentinel-managed master's name and its first sentinel), for
 * error messages and to tell masters apart. Never has a password.
 */
export function addressOf(config: RedisServerConfig): string {
  if (typeof config === 'string') {
    const url = new URL(config);
    return `${url.hostname}:${url.port || 6379}`;
  }
  const options = isRedisClient(config) ? config.options : config;
  const [sentinel] = options.sentinels ?? [];
  if (sentinel) {
    return `${options.name} via sentinel ${sentinel.host ?? '127.0.0.1'}:${sentinel.port ?? 26379}`;
  }
  return options.path ?? `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{ cluster: … }`; a client has a `cluster` method too (the CLUSTER command), so not that. */
function isClusterConfig(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && !isRedisClient(value) && 'cluster' in value;
}

function isClusterClient(value: unknown): value is Cluster {
  return isRedisClient(value) && typeof (value as Cluster).nodes === 'function';
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
