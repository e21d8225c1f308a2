import { LockOptionsError } from '../../../lock.errors.js';
import type { RedisClusterConfig } from '../../../options/lock-options.interface.js';
import { loadClientPackage } from '../client-package.js';
import { checkPortableClusterOptions, checkPortableOptions } from '../portable-options.js';
import type { RedisConnection } from '../redis-client.port.js';
import type { RedisClientLibrary } from '../redis-clients.js';
import { NodeRedisPort } from './node-redis.client.js';
import {
  createNodeRedisCluster,
  createNodeRedisServer,
  duplicateSentinel,
} from './node-redis.connections.js';
import { clientTarget, clusterTarget, sentinelTarget } from './node-redis.targets.js';
import {
  isNodeRedisClient,
  isNodeRedisCluster,
  isNodeRedisSentinel,
  type NodeRedisClient,
  type NodeRedisModule,
  type NodeRedisSentinel,
} from './node-redis.types.js';

const KIND = 'node-redis';
const load = () => loadClientPackage<NodeRedisModule>('redis', KIND);

/**
 * node-redis (the `redis` package, ^5 and ^6): a client, a Cluster or a Sentinel passed in, or
 * one made from a URL or options (the portable subset of ioredis's names, translated).
 */
export const nodeRedisLibrary: RedisClientLibrary = {
  packageName: 'redis',
  topologyOf: (value) =>
    isNodeRedisCluster(value)
      ? 'cluster'
      : isNodeRedisClient(value) || isNodeRedisSentinel(value)
        ? 'single'
        : undefined,
  checkOptions: (name, options) => checkPortableOptions(name, options, KIND),
  checkClusterOptions: (options) => checkPortableClusterOptions(options, KIND),
  checkClient: (name, client) => {
    const prefix =
      (client as { _keyPrefix?: unknown })._keyPrefix ??
      (client as NodeRedisClient).options?.keyPrefix;
    if (prefix === undefined) return;
    throw new LockOptionsError(
      name,
      // Not the client: its options may hold a password.
      typeof prefix === 'string' ? prefix : 'a keyPrefix',
      'a node-redis client without a keyPrefix, which raw commands do not get (use the ' +
        'module keyPrefix option instead)',
    );
  },
  server: (config) => {
    if (isNodeRedisSentinel(config)) return sentinelConnection(duplicateSentinel(config));
    if (isNodeRedisClient(config)) {
      return { client: new NodeRedisPort(clientTarget(config), false), owned: false };
    }
    const created = createNodeRedisServer(load(), config);
    return isNodeRedisSentinel(created)
      ? sentinelConnection(created)
      : { client: new NodeRedisPort(clientTarget(created), true), owned: true };
  },
  cluster: (config) =>
    isNodeRedisCluster(config)
      ? { client: new NodeRedisPort(clusterTarget(config), false), owned: false }
      : {
          client: new NodeRedisPort(
            clusterTarget(createNodeRedisCluster(load(), config as RedisClusterConfig)),
            true,
          ),
          owned: true,
        },
  optionsOf: (client) => {
    if (isNodeRedisSentinel(client)) {
      const node = client.getSentinelNode() as { host?: string; port?: number } | undefined;
      return { name: 'of the Sentinel client given', sentinels: [node ?? { host: 'unknown' }] };
    }
    const { url, socket, database } = (client as NodeRedisClient).options ?? {};
    if (url) {
      const { hostname, port, pathname } = new URL(url);
      const db = Number(pathname.slice(1) || database || 0);
      return { host: hostname, port: Number(port || 6379), db };
    }
    return { host: socket?.host, port: socket?.port, path: socket?.path, db: database };
  },
};

/**
 * A Sentinel the module owns, its own or beside the user's: node-redis sends the commands of
 * a shared Sentinel on whichever master client of its pool is free, so that two made one after
 * the other could overtake each other; the module's holds one of its own for all of them.
 */
function sentinelConnection(sentinel: NodeRedisSentinel): RedisConnection {
  return { client: new NodeRedisPort(sentinelTarget(sentinel), true), owned: true };
}
