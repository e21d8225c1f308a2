import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisClusterConfig } from '../../options/lock-options.interface.js';

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

/** Creates the client the module owns from a URL or ioredis options. */
export function createRedisClient(config: string | RedisOptions): Redis {
  return typeof config === 'string'
    ? new Redis(config, { ...CLIENT_DEFAULTS, ...LAZY })
    : new Redis({ ...CLIENT_DEFAULTS, ...config, ...LAZY });
}

/** Creates the Cluster client the module owns from its startup nodes and options. */
export function createClusterClient({ cluster, clusterOptions = {} }: RedisClusterConfig): Cluster {
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
