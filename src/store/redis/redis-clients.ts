import type {
  RedisClusterConfig,
  RedisConnectionOptions,
} from '../../options/lock-options.interface.js';
import { ioRedisLibrary } from './ioredis/ioredis.library.js';
import { glideLibrary } from './glide/glide.library.js';
import { nodeRedisLibrary } from './node-redis/node-redis.library.js';
import type { PortableServerOptions } from './portable-options.js';
import type { RedisConnection } from './redis-client.port.js';

/** The client libraries the Redis store speaks through (the `redisClient` module option). */
export const REDIS_CLIENT_KINDS = ['ioredis', 'iovalkey', 'node-redis', 'glide'] as const;
export type RedisClientKind = (typeof REDIS_CLIENT_KINDS)[number];

/**
 * One client library: how to tell its clients apart when one is passed as `redis`, which of
 * the `redis` options it honours, and how the store gets its connection on one server (or a
 * Sentinel-managed master) and on a Cluster: on the client passed in, or on one the module
 * opens (loading the library's package then, an optional peer) and owns.
 */
export interface RedisClientLibrary {
  /** The npm package to install for it. */
  readonly packageName: string;
  /**
   * What `value` is if it is a client of this library (of any copy of its package): one server
   * or a Sentinel-managed master, or a Cluster.
   */
  topologyOf(value: unknown): 'single' | 'cluster' | undefined;
  /** Refuses the options of a server, given as `name`, that this library would not honour. */
  checkOptions(name: string, options: Record<string, unknown>): void;
  /** Refuses the `clusterOptions` that this library would not honour. */
  checkClusterOptions(clusterOptions: Record<string, unknown>): void;
  /** Refuses a client passed in, as `name`, that the store cannot use as it is configured. */
  checkClient?(name: string, client: object): void;
  /**
   * The store's client on one server: the user's client, or one the module opens.
   * @param commandTimeout the store's, for a library whose clients have a request timeout
   */
  server(
    config: string | RedisConnectionOptions | object,
    commandTimeout?: number,
  ): RedisConnection;
  /** The store's client on a Cluster: the user's Cluster client, or one the module opens. */
  cluster(config: RedisClusterConfig | object, commandTimeout?: number): RedisConnection;
  /** Where a client passed in connects, for the boot line (hosts, ports, names only). */
  optionsOf(client: object): PortableServerOptions;
}

/** Every client library, by the name the `redisClient` option gives it. */
export const REDIS_CLIENTS: Record<RedisClientKind, RedisClientLibrary> = {
  ioredis: ioRedisLibrary('ioredis'),
  iovalkey: ioRedisLibrary('iovalkey'),
  'node-redis': nodeRedisLibrary,
  glide: glideLibrary,
};

/**
 * The library of a client passed as `redis`, and what it connects to; `undefined` for a URL,
 * options, or an object no library knows. iovalkey's clients are ioredis's (the same API).
 */
export function clientLibraryOf(
  value: unknown,
): { kind: RedisClientKind; topology: 'single' | 'cluster' } | undefined {
  for (const kind of ['glide', 'node-redis', 'ioredis'] as const) {
    const topology = REDIS_CLIENTS[kind].topologyOf(value);
    if (topology) return { kind, topology };
  }
  return undefined;
}

/** The options of a server's URL (none), options, or client passed in, for the boot line. */
export function serverOptionsOf(config: string | object): PortableServerOptions {
  if (typeof config === 'string') return {};
  const library = clientLibraryOf(config);
  return library ? REDIS_CLIENTS[library.kind].optionsOf(config) : config;
}
