import { lockNameOf } from '../../keys/lock-keys.js';
import { LockConnectionError } from '../../lock.errors.js';
import type { LockEvent } from '../lock-store.interface.js';
import type { RedisClientPort, RedisSubscriber } from './redis-client.port.js';
import { turnChannelOf } from './redis-keys.js';
import { eventOf } from './release-messages.js';
import type { PublishCommand } from './scripts/queue.lua.js';
import type { TimedCommand } from '../timed-command.js';

/** The ways to publish and subscribe: plain pub/sub, or sharded pub/sub on a Cluster. */
export const PUBSUB = {
  plain: { publish: 'PUBLISH', sharded: false },
  sharded: { publish: 'SPUBLISH', sharded: true },
} as const satisfies Record<string, { publish: PublishCommand; sharded: boolean }>;
type PubSub = (typeof PUBSUB)[keyof typeof PUBSUB];

/**
 * The release notifications of one store: one subscriber connection and, per key that has
 * waiters in this process, the key's own channel (its releases, and the turns of waiters whose
 * tokens name no instance) and the turn channel of this process's instance for the key (see
 * `turnChannelOf`), so that a handover wakes only the process whose caller is next. A channel's
 * messages go to every listener of it. On a Cluster whose servers have it (Redis 7), the
 * channels are sharded: a release is published only to the shard that owns the lock's slot
 * instead of to every node, and both channels of a key lie in its slot.
 */
export class ReleaseChannels {
  private subscriber?: RedisSubscriber;
  /** The listeners of each channel subscribed to, by channel name. */
  private readonly listeners = new Map<string, Set<(event: LockEvent) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();
  /** Settled on the first command that needs it: which pub/sub the store uses. */
  private pubsub?: Promise<PubSub>;
  private closed = false;

  /**
   * @param client the store's client, which makes the subscriber connection
   * @param onError receives the subscriber's connection problems
   * @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name
   */
  constructor(
    private readonly client: RedisClientPort,
    private readonly command: TimedCommand,
    private readonly onError: (message: string, error: unknown) => void,
    private readonly keyPrefix: string,
  ) {}

  /**
   * Calls `onEvent` with each message published on `key`'s channel and, when `instance` (an
   * owner mark) is given, on that instance's turn channel for `key`, until unsubscribed.
   * Resolves once both subscriptions are confirmed.
   */
  async subscribe(
    key: string,
    onEvent: (event: LockEvent) => void,
    instance?: string,
  ): Promise<() => void> {
    if (this.closed) {
      throw new LockConnectionError(lockNameOf(this.keyPrefix, key), 'the lock store is closed');
    }
    const pubsub = await this.pubSub(key);
    const channels = instance ? [key, turnChannelOf(key, instance)] : [key];
    const stops = channels.map((channel) => this.listen(channel, onEvent, pubsub));
    const unsubscribe = () => {
      for (const stop of stops) stop();
    };
    try {
      await this.command(key, 'subscribe', () =>
        Promise.all(channels.map((channel) => this.subscribing.get(channel) ?? Promise.resolve())),
      );
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /**
   * Sharded pub/sub on a Cluster whose servers know SPUBLISH (Redis 7 and later) and whose
   * client can subscribe to each shard (ioredis 5.6 and later), plain pub/sub everywhere else. Asked once, on the first command that publishes
   * or subscribes.
   */
  pubSub(key: string): Promise<PubSub> {
    if (!this.client.shardedSubscribe) return Promise.resolve(PUBSUB.plain);
    this.pubsub ??= this.command(key, 'COMMAND INFO', () =>
      this.client.hasCommand('SPUBLISH'),
    ).then((known) => (known ? PUBSUB.sharded : PUBSUB.plain));
    // Not kept when it failed, so that the next command asks again.
    this.pubsub.catch(() => (this.pubsub = undefined));
    return this.pubsub;
  }

  /** Ends every subscription and closes the subscriber connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.subscriber) await this.subscriber.close();
  }

  /**
   * Adds `onEvent` to the listeners of `channel`, subscribing to it when it is the first (the
   * subscription on its way is in `subscribing` until confirmed); returns what removes it, and
   * unsubscribes with the last.
   */
  private listen(channel: string, onEvent: (event: LockEvent) => void, pubsub: PubSub) {
    let listeners = this.listeners.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(channel, listeners);
      const subscriber = this.subscriberConnection(pubsub);
      const ready = subscriber.subscribe(channel).finally(() => this.subscribing.delete(channel));
      this.subscribing.set(channel, ready);
    }
    listeners.add(onEvent);
    const own = listeners;
    return () => {
      if (!own.delete(onEvent) || own.size > 0) return;
      this.listeners.delete(channel);
      if (!this.closed) this.subscriber?.unsubscribe(channel).catch(() => undefined);
    };
  }

  private subscriberConnection(pubsub: PubSub): RedisSubscriber {
    this.subscriber ??= this.client.subscriber({
      sharded: pubsub.sharded,
      onError: (error) => this.onError('Redis subscriber error', error),
      onMessage: (channel, message) => {
        const listeners = this.listeners.get(channel);
        if (!listeners) return;
        const event = eventOf(message);
        for (const listener of listeners) listener(event);
      },
    });
    return this.subscriber;
  }
}
