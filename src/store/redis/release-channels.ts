import type { Cluster, Redis } from 'ioredis';
import { isClusterClient } from '../../options/redis-topology.js';
import { LockConnectionError } from '../../lock.errors.js';
import { closeConnection } from './redis-clients.js';
import type { TimedCommand } from './timed-command.js';

/** The ways to publish and subscribe: plain pub/sub, or sharded pub/sub on a Cluster. */
export const PUBSUB = {
  plain: {
    publish: 'PUBLISH',
    subscribe: 'subscribe',
    unsubscribe: 'unsubscribe',
    event: 'message',
  },
  sharded: {
    publish: 'SPUBLISH',
    subscribe: 'ssubscribe',
    unsubscribe: 'sunsubscribe',
    event: 'smessage',
  },
} as const;
type PubSub = (typeof PUBSUB)[keyof typeof PUBSUB];

/**
 * The release notifications of one store: one subscriber connection, and one channel per key
 * that has waiters in this process, named after the key, whose messages go to every listener
 * of that key. On a Cluster whose servers have it (Redis 7), the channels are sharded: a
 * release is published only to the shard that owns the lock's slot instead of to every node.
 */
export class ReleaseChannels {
  private readonly cluster: boolean;
  private subscriber?: Redis | Cluster;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();
  /** Settled on the first command that needs it: which pub/sub the store uses. */
  private pubsub?: Promise<PubSub>;
  private closed = false;

  /**
   * @param client the store's client, which the subscriber connection duplicates
   * @param onError receives the subscriber's connection problems
   */
  constructor(
    private readonly client: Redis | Cluster,
    private readonly command: TimedCommand,
    private readonly onError: (message: string, error: unknown) => void,
  ) {
    this.cluster = isClusterClient(client);
  }

  /** Calls `onRelease` with each message published on `key`'s channel, until unsubscribed. */
  async subscribe(key: string, onRelease: (message: string) => void): Promise<() => void> {
    if (this.closed) throw new LockConnectionError(key, 'the lock store is closed');
    const pubsub = await this.pubSub(key);
    let listeners = this.listeners.get(key);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(key, listeners);
      const subscriber = this.subscriberConnection(pubsub);
      const ready = subscriber[pubsub.subscribe](key).finally(() => this.subscribing.delete(key));
      this.subscribing.set(key, ready);
    }
    listeners.add(onRelease);
    const unsubscribe = () => {
      if (!listeners.delete(onRelease) || listeners.size > 0) return;
      this.listeners.delete(key);
      if (!this.closed) this.subscriber?.[pubsub.unsubscribe](key).catch(() => undefined);
    };
    try {
      await this.command(key, 'subscribe', () => this.subscribing.get(key) ?? Promise.resolve());
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /**
   * Sharded pub/sub on a Cluster whose servers know SPUBLISH (Redis 7 and later) and whose
   * ioredis can subscribe to each shard (5.6 and later: it has the `shardedSubscribers`
   * option), plain pub/sub everywhere else. Asked once, on the first command that publishes
   * or subscribes.
   */
  pubSub(key: string): Promise<PubSub> {
    if (!this.cluster || !('shardedSubscribers' in this.client.options)) {
      return Promise.resolve(PUBSUB.plain);
    }
    this.pubsub ??= this.command(key, 'COMMAND INFO', () =>
      this.client.call('COMMAND', 'INFO', 'SPUBLISH'),
    ).then((info) => (Array.isArray(info) && info[0] ? PUBSUB.sharded : PUBSUB.plain));
    // Not kept when it failed, so that the next command asks again.
    this.pubsub.catch(() => (this.pubsub = undefined));
    return this.pubsub;
  }

  /** Ends every subscription and closes the subscriber connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.subscriber) await closeConnection(this.subscriber);
  }

  private subscriberConnection(pubsub: PubSub): Redis | Cluster {
    if (!this.subscriber) {
      // Queue SUBSCRIBE until the new connection is ready, whatever the user's client says. A
      // Cluster subscribes to sharded channels through one connection per master. It connects
      // at once (it is made when a caller starts to wait, after the boot), and without the
      // ready check: ioredis writes SUBSCRIBE (allowed while a server loads) as soon as the
      // socket is up, and the check's INFO, sent after it, would be refused in subscriber mode.
      const subscriber = isClusterClient(this.client)
        ? this.client.duplicate([], {
            shardedSubscribers: pubsub === PUBSUB.sharded,
            lazyConnect: false,
          })
        : this.client.duplicate({
            enableOfflineQueue: true,
            lazyConnect: false,
            enableReadyCheck: false,
          });
      subscriber.on('error', (error) => this.onError('Redis subscriber error', error));
      subscriber.on(pubsub.event, (channel: string, message: string) => {
        for (const listener of this.listeners.get(channel) ?? []) listener(message);
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }
}
