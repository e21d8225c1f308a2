import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { DEFAULT_REDIS_URL } from '../lock.constants.js';
import { LockOptionsError } from '../lock.errors.js';
import type {
  RedisClusterConfig,
  RedisServerConfig,
  ResolvedRedis,
} from './lock-options.interface.js';
import { isRecord, rejectUnknown } from './option-checks.js';

/**
 * Tells which topology the module's `redis` option describes (one server or a Sentinel-managed
 * master, a Cluster, or RedLock over an array of masters) and checks it. Error messages never
 * show a password.
 * @throws LockOptionsError naming the first invalid part and its value
 */
export function resolveRedis(value: unknown): ResolvedRedis {
  if (value === undefined) return { topology: 'single', config: DEFAULT_REDIS_URL };
  if (Array.isArray(value)) return { topology: 'redlock', nodes: resolveRedlockNodes(value) };
  if (isClusterClient(value)) return { topology: 'cluster', config: checkClusterPrefix(value) };
  if (isClusterConfig(value)) return { topology: 'cluster', config: resolveClusterConfig(value) };
  return { topology: 'single', config: resolveServer('redis', value) };
}

function resolveClusterConfig(value: Record<string, unknown>): RedisClusterConfig {
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
  return value as unknown as RedisClusterConfig;
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
    return value;
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
  // Whatever comes before the last "@", after the scheme if there is one: also in a URL that
  // lacks its scheme, such as "user:secret@host:6379".
  const scheme = value.indexOf('://');
  const start = scheme < 0 ? 0 : scheme + 3;
  const at = value.lastIndexOf('@');
  return at > start ? `${value.slice(0, start)}***${value.slice(at)}` : value;
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

/** `{ cluster: … }`; a client has a `cluster` method too (the CLUSTER command), so not that. */
function isClusterConfig(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && !isRedisClient(value) && 'cluster' in value;
}

/** Tells an ioredis `Cluster` (of any copy of ioredis, hence no `instanceof`) from a `Redis`. */
export function isClusterClient(value: unknown): value is Cluster {
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
