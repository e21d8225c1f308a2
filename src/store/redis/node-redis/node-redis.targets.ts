import type { RedisSubscriber, SubscriberOptions } from '../redis-client.port.js';
import type { NodeRedisTarget } from './node-redis.client.js';
import { closeNodeRedis } from './node-redis.connections.js';
import type {
  NodeRedisClient,
  NodeRedisCluster,
  NodeRedisConnection,
  NodeRedisListener,
  NodeRedisSentinel,
} from './node-redis.types.js';

/** A client of one server: commands go out on its one connection, in the order they are sent. */
export function clientTarget(client: NodeRedisClient): NodeRedisTarget {
  return {
    connection: client,
    cluster: false,
    queuesWhileConnecting: true,
    send: (_, args) => client.sendCommand(args),
    socket: () => client.socketEpoch,
    subscriber: (options) => duplicateSubscriber(client, options, { disableOfflineQueue: false }),
  };
}

/** A Cluster: each command goes to the master of its first key's slot. */
export function clusterTarget(cluster: NodeRedisCluster): NodeRedisTarget {
  return {
    connection: cluster,
    cluster: true,
    queuesWhileConnecting: false,
    send: (firstKey, args) => cluster.sendCommand(firstKey, false, args),
    socket: () => undefined,
    subscriber: (options) => duplicateSubscriber(cluster, options),
  };
}

/**
 * A Sentinel of the module's own (see `duplicateSentinel`), whose one reserved master client
 * takes every command in order. It subscribes through its own pub/sub connection to the
 * master, which follows a failover.
 */
export function sentinelTarget(sentinel: NodeRedisSentinel): NodeRedisTarget {
  return {
    connection: sentinel,
    cluster: false,
    queuesWhileConnecting: false,
    send: (_, args) => sentinel.sendCommand(false, args),
    socket: () => undefined,
    subscriber: ({ onMessage }, opened) => {
      const channels = new Set<string>();
      const listener: NodeRedisListener = (message, channel) => onMessage(channel, message);
      return {
        subscribe: (channel) => {
          channels.add(channel);
          return opened().then(() => sentinel.subscribe(channel, listener));
        },
        unsubscribe: (channel) => {
          channels.delete(channel);
          return sentinel.unsubscribe(channel);
        },
        close: async () => {
          const left = [...channels];
          channels.clear();
          await Promise.all(left.map((channel) => sentinel.unsubscribe(channel).catch(() => 0)));
        },
      };
    },
  };
}

/**
 * A connection of its own for subscriptions, made like the store's client (`duplicate()`), so
 * with its options: it connects at once, and its commands wait until it is connected. The
 * store's client, passed in or not, is left as it is.
 */
function duplicateSubscriber(
  source: NodeRedisConnection,
  { sharded, onMessage, onError }: SubscriberOptions,
  overrides?: object,
): RedisSubscriber {
  const connection = source.duplicate(overrides) as NodeRedisConnection;
  connection.on('error', onError);
  let opening: Promise<unknown> | undefined;
  let closed = false;
  const opened = () => {
    if (!opening && !closed) {
      const attempt = connection.connect();
      // One that never came up (a Cluster without a reachable node) is tried again.
      attempt.catch(() => (opening = opening === attempt ? undefined : opening));
      opening = attempt;
    }
    return opening ?? Promise.resolve();
  };
  void opened();
  const listener: NodeRedisListener = (message, channel) => onMessage(channel, message);
  return {
    subscribe: (channel) =>
      opened().then(() =>
        sharded
          ? connection.sSubscribe(channel, listener)
          : connection.subscribe(channel, listener),
      ),
    unsubscribe: (channel) =>
      opened().then(() =>
        sharded ? connection.sUnsubscribe(channel) : connection.unsubscribe(channel),
      ),
    close: () => {
      closed = true;
      return closeNodeRedis(connection);
    },
  };
}
