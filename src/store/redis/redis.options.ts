import { DEFAULT_REDIS_URL } from '../../lock.constants.js';
import { LockOptionsError } from '../../lock.errors.js';
import type {
  RedisClusterConfig,
  RedisServerConfig,
  ResolvedRedis,
} from '../../options/lock-options.interface.js';
import { isRecord, rejectUnknown } from '../../options/option-checks.js';
import { clusterKeyPrefixOf, isClusterClient } from './ioredis/ioredis.connections.js';
import {
  clientLibraryOf,
  REDIS_CLIENT_KINDS,
  REDIS_CLIENTS,
  serverOptionsOf,
  type RedisClientKind,
} from './redis-clients.js';

/**
 * The `redisClient` option: which library connects from a URL or options (default ioredis).
 * @throws LockOptionsError for a library the module does not know
 */
export function resolveRedisClient(value: unknown): RedisClientKind {
  if (value === undefined) return 'ioredis';
  if (!(REDIS_CLIENT_KINDS as readonly unknown[]).includes(value)) {
    throw new LockOptionsError(
      'redisClient',
      value,
      REDIS_CLIENT_KINDS.map((kind) => `'${kind}'`)
        .join(', ')
        .replace(/, ([^,]*)$/, ' or $1'),
    );
  }
  return value as RedisClientKind;
}

/**
 * Tells which topology the module's `redis` option describes (one server or a Sentinel-managed
 * master, a Cluster, or RedLock over an array of masters) and checks it against the library
 * that connects from a URL or options (`kind`). Error messages never show a password.
 * @throws LockOptionsError naming the first invalid part and its value
 */
export function resolveRedis(value: unknown, kind: RedisClientKind = 'ioredis'): ResolvedRedis {
  if (value === undefined) return { topology: 'single', config: DEFAULT_REDIS_URL };
  if (Array.isArray(value)) return { topology: 'redlock', nodes: resolveRedlockNodes(value, kind) };
  if (clientLibraryOf(value)?.topology === 'cluster') {
    checkPassedClient('redis', value as object);
    if (isClusterClient(value)) checkClusterPrefix(clusterKeyPrefixOf(value));
    return { topology: 'cluster', config: value as ClusterClient };
  }
  if (isClusterConfig(value)) {
    return { topology: 'cluster', config: resolveClusterConfig(value, kind) };
  }
  return { topology: 'single', config: resolveServer('redis', value, kind) };
}

type ClusterClient = Extract<ResolvedRedis, { topology: 'cluster' }>['config'];

/** A client passed in: one the module can use as it is. */
function checkPassedClient(name: string, client: object): void {
  const library = clientLibraryOf(client);
  if (library) REDIS_CLIENTS[library.kind].checkClient?.(name, client);
}

function resolveClusterConfig(
  value: Record<string, unknown>,
  kind: RedisClientKind,
): RedisClusterConfig {
  if (!Array.isArray(value.cluster) || value.cluster.length === 0) {
    throw new LockOptionsError('redis.cluster', value.cluster, 'a non-empty array of nodes');
  }
  rejectUnknown(value, new Set(['cluster', 'clusterOptions']), 'redis');
  const clusterOptions = value.clusterOptions ?? {};
  if (!isRecord(clusterOptions)) {
    throw new LockOptionsError('redis.clusterOptions', clusterOptions, 'ioredis ClusterOptions');
  }
  REDIS_CLIENTS[kind].checkClusterOptions(clusterOptions);
  const { redisOptions } = clusterOptions;
  checkClusterPrefix(
    clusterOptions.keyPrefix ?? (isRecord(redisOptions) ? redisOptions.keyPrefix : undefined),
  );
  return value as unknown as RedisClusterConfig;
}

/** One server of a single-Redis or RedLock configuration. */
function resolveServer(name: string, value: unknown, kind: RedisClientKind): RedisServerConfig {
  const master = name !== 'redis';
  if (typeof value === 'string') return checkUrl(name, value);
  const passed = clientLibraryOf(value);
  if (master && (passed?.topology === 'cluster' || isClusterConfig(value))) {
    // Not the value itself: its options may hold a password.
    throw new LockOptionsError(name, 'a Cluster', 'a single Redis master here, not a Cluster');
  }
  if (passed) {
    checkPassedClient(name, value as object);
    return value as RedisServerConfig;
  }
  if (isPlainObject(value)) {
    if (value.sentinels !== undefined) checkSentinels(name, value);
    REDIS_CLIENTS[kind].checkOptions(name, value);
    return value;
  }
  throw new LockOptionsError(
    name,
    // An object of a class: not shown, as it may hold a password.
    isRecord(value) ? `an object of class ${value.constructor?.name ?? 'unknown'}` : value,
    (master
      ? 'a redis:// URL, ioredis options or a client'
      : 'a redis:// URL, ioredis options, a client, a Cluster, or an array of masters') +
      ' (clients: ioredis, iovalkey, node-redis)',
  );
}

/** Options are a plain object (of any realm); an object of a class is a client or nothing. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === null || Object.getPrototypeOf(prototype) === null;
}

function resolveRedlockNodes(values: unknown[], kind: RedisClientKind): RedisServerConfig[] {
  if (values.length < 3) {
    throw new LockOptionsError(
      'redis',
      values.map((value) => (typeof value === 'string' ? withoutPassword(value) : 'a server')),
      'at least 3 masters for RedLock (fewer tolerate no failure; use a single Redis instead)',
    );
  }
  const seen = new Set<string>();
  return values.map((value, i) => {
    const node = resolveServer(`redis[${i}]`, value, kind);
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
function checkClusterPrefix(prefix: unknown): void {
  if (!prefix) return;
  throw new LockOptionsError(
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
  const options = serverOptionsOf(config);
  const [sentinel] = options.sentinels ?? [];
  if (sentinel) {
    return `${options.name} via sentinel ${sentinel.host ?? '127.0.0.1'}:${sentinel.port ?? 26379}`;
  }
  return options.path ?? `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}

/** `{ cluster: … }`; a client has a `cluster` method too (the CLUSTER command), so not that. */
function isClusterConfig(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && !clientLibraryOf(value) && 'cluster' in value;
}
