import type {
  RedisClusterConfig,
  RedisClusterNode,
} from '../../../options/lock-options.interface.js';
import type { PortableServerOptions } from '../portable-options.js';
import type {
  NodeRedisClient,
  NodeRedisCluster,
  NodeRedisConnection,
  NodeRedisModule,
  NodeRedisSentinel,
} from './node-redis.types.js';

/** How long `closeNodeRedis` waits for the replies still due before dropping a connection. */
const CLOSE_TIMEOUT = 1_000;

/**
 * Commands wait in node-redis's queue while it (re)connects, whatever the user's client says:
 * the store bounds each one with its own `commandTimeout`.
 */
const QUEUE_OFFLINE = { disableOfflineQueue: false } as const;

/** Creates the client the module owns from a URL or options (a Sentinel's with `sentinels`). */
export function createNodeRedisServer(
  redis: NodeRedisModule,
  config: string | PortableServerOptions,
): NodeRedisClient | NodeRedisSentinel {
  if (typeof config === 'string') return redis.createClient({ url: config, ...QUEUE_OFFLINE });
  const { sentinels, name, sentinelUsername, sentinelPassword, ...server } = config;
  const node = clientOptionsOf(server);
  if (!sentinels?.length) return redis.createClient({ ...node, ...QUEUE_OFFLINE });
  return redis.createSentinel({
    name,
    sentinelRootNodes: sentinels.map(({ host, port }) => ({
      host: host ?? '127.0.0.1',
      port: port ?? 26379,
    })),
    nodeClientOptions: { ...node, ...QUEUE_OFFLINE },
    sentinelClientOptions: clientOptionsOf({
      username: sentinelUsername ?? undefined,
      password: sentinelPassword ?? undefined,
    }),
    // Every command of the store on one connection to the master, in the order they are made.
    reserveClient: true,
  });
}

/** Creates the Cluster client the module owns from its startup nodes and options. */
export function createNodeRedisCluster(
  redis: NodeRedisModule,
  { cluster, clusterOptions = {} }: RedisClusterConfig,
): NodeRedisCluster {
  const defaults = clientOptionsOf(clusterOptions.redisOptions ?? {});
  return redis.createCluster({
    rootNodes: cluster.map(rootNodeOf),
    defaults: { ...defaults, ...QUEUE_OFFLINE },
  });
}

/** A Sentinel client of the module's own beside the user's, which keeps its own pool. */
export function duplicateSentinel(sentinel: NodeRedisSentinel): NodeRedisSentinel {
  return sentinel.duplicate({ reserveClient: true }) as NodeRedisSentinel;
}

/** node-redis's client options for ioredis's names of the same things. */
function clientOptionsOf({
  host,
  port,
  path,
  username,
  password,
  db,
  tls,
  connectTimeout,
}: PortableServerOptions): object {
  const socket = path
    ? { path, connectTimeout }
    : {
        host: host ?? '127.0.0.1',
        port: port ?? 6379,
        connectTimeout,
        ...(tls && { tls: true, ...(typeof tls === 'object' ? tls : {}) }),
      };
  return withoutUndefined({ socket: withoutUndefined(socket), username, password, database: db });
}

/** A Cluster startup node as ioredis takes it (a port, `host:port`, a URL, or options). */
function rootNodeOf(node: RedisClusterNode): object {
  if (typeof node === 'number') return { socket: { host: '127.0.0.1', port: node } };
  if (typeof node === 'string') {
    if (node.includes('://')) return { url: node };
    const [host, port] = node.includes(':') ? node.split(':') : ['127.0.0.1', node];
    return { socket: { host, port: Number(port) } };
  }
  return { socket: { host: node.host ?? '127.0.0.1', port: node.port ?? 6379 } };
}

function withoutUndefined(options: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/**
 * Closes a connection the module owns: once the replies still due have come when it is up,
 * within {@link CLOSE_TIMEOUT}, and at once when it is not (never connected, or reconnecting).
 */
export async function closeNodeRedis(connection: NodeRedisConnection): Promise<void> {
  if (connection.isOpen && connection.isReady) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT);
    });
    await Promise.race([quietly(() => connection.close()), timeout]);
    clearTimeout(timer);
  }
  await quietly(() => connection.destroy());
}

/** Runs a call whose failure (a connection already closed) changes nothing. */
async function quietly(call: () => unknown): Promise<void> {
  try {
    await call();
  } catch {
    // Already closed.
  }
}
