import type { Cluster, ClusterNode, Redis, RedisOptions } from 'ioredis';
import type { RedisClusterConfig } from '../../../options/lock-options.interface.js';

/** How long `closeConnection` waits for a polite QUIT before dropping a connection. */
const QUIT_TIMEOUT = 1_000;

/**
 * ioredis keeps a closed connection's timer for `disconnectTimeout` (2 s by default) when Redis
 * was unreachable, which holds up the exit of an app that shuts down.
 */
const CLIENT_DEFAULTS: RedisOptions = { disconnectTimeout: 200 };

/**
 * The module's clients connect on their first command, not when they are created: a boot that
 * fails after the store was created (in any module's provider or hook) calls no shutdown hook,
 * and a connection opened then would stay open and keep the process alive.
 */
const LAZY = { lazyConnect: true } as const;

/**
 * The classes of ioredis or of iovalkey (a fork with the same API), loaded when the module
 * connects through one of them.
 */
export interface IoRedisModule {
  Redis: typeof Redis;
  Cluster: typeof Cluster;
}

/** Creates the client the module owns from a URL or ioredis options. */
export function createRedisClient({ Redis }: IoRedisModule, config: string | RedisOptions): Redis {
  return typeof config === 'string'
    ? new Redis(config, { ...CLIENT_DEFAULTS, ...LAZY })
    : new Redis({ ...CLIENT_DEFAULTS, ...config, ...LAZY });
}

/** Creates the Cluster client the module owns from its startup nodes and options. */
export function createClusterClient(
  { Cluster }: IoRedisModule,
  { cluster, clusterOptions = {} }: RedisClusterConfig,
): Cluster {
  return new Cluster(cluster, {
    ...clusterOptions,
    ...LAZY,
    redisOptions: { ...CLIENT_DEFAULTS, ...clusterOptions.redisOptions },
  });
}

/** Closes a connection: politely (QUIT) when it is up, within {@link QUIT_TIMEOUT}. */
export async function closeConnection(connection: Redis | Cluster): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status !== 'ready') {
    // Not connected (Redis down, still connecting): nothing to say goodbye to.
    connection.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, QUIT_TIMEOUT);
  });
  await Promise.race([connection.quit().catch(() => undefined), timeout]);
  clearTimeout(timer);
  connection.disconnect();
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

/** The ioredis `keyPrefix` of a Cluster client, or of the clients it makes for its nodes. */
export function clusterKeyPrefixOf(cluster: Cluster): string | undefined {
  return cluster.options.keyPrefix ?? cluster.options.redisOptions?.keyPrefix;
}

/** The startup nodes of a Cluster (known to ioredis, not typed by it), or of its config. */
export function startupNodesOf(config: object): ClusterNode[] | undefined {
  return isClusterClient(config)
    ? (config as unknown as { startupNodes?: ClusterNode[] }).startupNodes
    : (config as Partial<RedisClusterConfig>).cluster;
}
