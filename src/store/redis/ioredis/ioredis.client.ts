import type { Cluster, Redis } from 'ioredis';
import type {
  RedisClientPort,
  RedisScript,
  RedisSubscriber,
  SubscriberOptions,
} from '../redis-client.port.js';
import { closeConnection, isClusterClient } from './ioredis.connections.js';

/**
 * The scripts each connection (known by its socket, which ioredis replaces on every reconnect)
 * has sent with EVAL, so that its server has them cached.
 */
const cachedOn = new WeakMap<object, Set<string>>();

/**
 * The Redis client port on an ioredis `Redis` or `Cluster` (or an iovalkey one: the same API).
 */
export class IoRedisClient implements RedisClientPort {
  readonly cluster: boolean;

  constructor(private readonly connection: Redis | Cluster) {
    this.cluster = isClusterClient(connection);
  }

  /**
   * False once the connection is known down: waiting to reconnect, closed, or connecting again
   * after it failed (ioredis counts its reconnect attempts since the last `ready`; a client
   * that never failed is given the time to connect).
   */
  get reachable(): boolean {
    const { status } = this.connection;
    if (['reconnecting', 'close', 'end'].includes(status)) return false;
    const { retryAttempts } = this.connection as unknown as { retryAttempts?: number };
    return status === 'ready' || !(retryAttempts !== undefined && retryAttempts > 0);
  }

  /** A Cluster whose ioredis subscribes per shard (5.6 and later have `shardedSubscribers`). */
  get shardedSubscribe(): boolean {
    return this.cluster && 'shardedSubscribers' in this.connection.options;
  }

  /**
   * The first call on each connection of a single Redis, and any call made while the connection
   * is being set up, sends the whole script (EVAL), which runs it and caches it: a restarted
   * server, which has forgotten it, is met by a new connection. Otherwise, a NOSCRIPT answer
   * would need a second request, sent after whatever the connection sent meanwhile, and a
   * release sent right after an attempt could then run before it. On a Cluster (one cache per
   * node), and after a SCRIPT FLUSH, NOSCRIPT falls back to EVAL. Every acquisition and release
   * goes through here, so it chains no more promises than the command and the decoding.
   */
  runScript<Reply>(
    script: RedisScript<Reply>,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<Reply> {
    const client = this.connection;
    if (!this.cluster) {
      // Only a connection that is up is the one the command goes out on. While ioredis
      // connects or reconnects, `stream` is missing or still the old socket, and the command
      // waits for a new one: then the whole script goes.
      const socket: object | undefined =
        client.status === 'ready' ? (client as Redis).stream : undefined;
      const cached = socket && cachedOn.get(socket);
      if (!cached?.has(script.sha)) {
        return client.eval(script.source, keys.length, ...keys, ...args).then((reply) => {
          if (socket) cachedOn.set(socket, (cachedOn.get(socket) ?? new Set()).add(script.sha));
          return script.decode(reply);
        });
      }
    }
    return client
      .evalsha(script.sha, keys.length, ...keys, ...args)
      .then(script.decode, (error) => {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return client.eval(script.source, keys.length, ...keys, ...args).then(script.decode);
      });
  }

  exists(key: string): Promise<number> {
    return this.connection.exists(key).then(Number);
  }

  waitForReplicas(replicas: number, timeout: number): Promise<number> {
    return this.connection.wait(replicas, timeout).then(Number);
  }

  hasCommand(command: string): Promise<boolean> {
    return this.connection
      .call('COMMAND', 'INFO', command)
      .then((info) => Array.isArray(info) && Boolean(info[0]));
  }

  subscriber({ sharded, onMessage, onError }: SubscriberOptions): RedisSubscriber {
    // Queue SUBSCRIBE until the new connection is ready, whatever the user's client says. A
    // Cluster subscribes to sharded channels through one connection per master. It connects
    // at once (it is made when a caller starts to wait, after the boot), and without the
    // ready check: ioredis writes SUBSCRIBE (allowed while a server loads) as soon as the
    // socket is up, and the check's INFO, sent after it, would be refused in subscriber mode.
    const cluster = isClusterClient(this.connection);
    const connection = isClusterClient(this.connection)
      ? this.connection.duplicate([], { shardedSubscribers: sharded, lazyConnect: false })
      : this.connection.duplicate({
          enableOfflineQueue: true,
          lazyConnect: false,
          enableReadyCheck: false,
          autoResubscribe: false,
        });
    const channels = new Set<string>();
    if (!cluster) {
      // ioredis's own resubscription after a reconnect (a failover, a restart) is a promise
      // nobody can handle: a close before it is answered made it an unhandled rejection. On
      // every connection, the first too (a SUBSCRIBE written before it was ready can be lost
      // with its socket), each channel again, one command each: a SUBSCRIBE of a channel
      // already subscribed changes nothing, and a command of several channels cut halfway would
      // confuse ioredis's count of their answers.
      connection.on('ready', () => {
        for (const channel of channels) {
          const again = sharded ? connection.ssubscribe(channel) : connection.subscribe(channel);
          again.catch((error: unknown) => {
            if (connection.status !== 'end') onError(error);
          });
        }
      });
    }
    connection.on('error', onError);
    connection.on(sharded ? 'smessage' : 'message', onMessage);
    return {
      subscribe: (channel) => {
        channels.add(channel);
        return sharded ? connection.ssubscribe(channel) : connection.subscribe(channel);
      },
      unsubscribe: (channel) => {
        channels.delete(channel);
        return sharded ? connection.sunsubscribe(channel) : connection.unsubscribe(channel);
      },
      close: () => closeConnection(connection),
    };
  }

  onError(listener: (error: unknown) => void): () => void {
    this.connection.on('error', listener);
    return () => this.connection.off('error', listener);
  }

  onClose(listener: () => void): () => void {
    this.connection.on('close', listener);
    return () => this.connection.off('close', listener);
  }

  onReady(listener: () => void): () => void {
    this.connection.on('ready', listener);
    return () => this.connection.off('ready', listener);
  }

  close(): Promise<void> {
    return closeConnection(this.connection);
  }
}
