import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { FENCE_TTL } from '../lock.constants.js';
import { LockConnectionError, messageOf } from '../lock.errors.js';
import { scriptKeysOf } from '../lock.keys.js';
import { ACQUIRE_SCRIPT } from '../scripts/acquire.script.js';
import { FENCED_WRITE_SCRIPT } from '../scripts/fenced-write.script.js';
import { RELEASE_SCRIPT } from '../scripts/release.script.js';
import { RENEW_SCRIPT } from '../scripts/renew.script.js';
import {
  QUEUE_LEASE,
  type AcquireAttempt,
  type LockStore,
  type RenewalEntry,
} from './lock-store.interface.js';

/** Keys per renewal script call, so that one call never blocks Redis for long. */
const RENEW_CHUNK = 500;
/** How long `close()` waits for a polite QUIT before dropping a connection. */
const QUIT_TIMEOUT = 1_000;

export interface RedisLockStoreOptions {
  client: Redis | Cluster;
  /** Whether `close()` should close `client` (true when the module created it). */
  ownsClient: boolean;
  /**
   * Waiters queue in Redis and releases hand the lock over; when false, every release that
   * nobody was queued for is announced instead, to wake the waiters that race for it.
   */
  fair: boolean;
  commandTimeout: number;
  /** Receives connection problems that no caller is waiting for. */
  onError: (message: string, error: unknown) => void;
}

/**
 * The lock store on one Redis server (or a client the user configured), with release
 * notifications over pub/sub: one subscriber connection per store, and one channel per key that
 * has waiters in this process, named after the key.
 */
export class RedisLockStore implements LockStore {
  private readonly client: Redis | Cluster;
  private subscriber?: Redis | Cluster;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();
  private closed = false;

  constructor(private readonly options: RedisLockStoreOptions) {
    this.client = options.client;
    if (options.ownsClient) {
      this.client.on('error', (error) => options.onError('Redis connection error', error));
    }
  }

  async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    const reply = this.command(key, 'acquire', () =>
      ACQUIRE_SCRIPT.run(this.client, scriptKeysOf(key), [
        token,
        ttl,
        FENCE_TTL,
        key,
        queue ? 1 : 0,
        QUEUE_LEASE,
      ]),
    );
    const [acquired, value] = (await reply.catch((error) => {
      // An attempt that timed out may still reach Redis later and take the lock or a place in
      // its queue; once it has, give back whatever it took (release also leaves the queue).
      void reply.late.then(
        () => (inUse() ? undefined : this.release(key, token).catch(() => undefined)),
        () => undefined,
      );
      throw error;
    })) as [number | string, number | string];
    // Number(): a client configured with ioredis's `stringNumbers` answers integers as strings.
    return Number(acquired) === 1
      ? { acquired: true, fencingToken: Number(value) }
      : { acquired: false, pttl: Number(value) };
  }

  async release(key: string, token: string): Promise<boolean> {
    const reply = await this.command(key, 'release', () =>
      RELEASE_SCRIPT.run(this.client, scriptKeysOf(key), [
        token,
        key,
        FENCE_TTL,
        this.options.fair ? 0 : 1,
      ]),
    );
    return Number(reply) === 1;
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    const chunks: Promise<unknown>[] = [];
    for (let i = 0; i < entries.length; i += RENEW_CHUNK) {
      const chunk = entries.slice(i, i + RENEW_CHUNK);
      chunks.push(
        this.command(chunk[0].key, 'renew', () =>
          RENEW_SCRIPT.run(
            this.client,
            chunk.map((entry) => entry.key),
            chunk.flatMap((entry) => [entry.token, entry.ttl]),
          ),
        ),
      );
    }
    const replies = (await Promise.all(chunks)) as unknown[][];
    return replies.flat().map((renewed) => Number(renewed) === 1);
  }

  async writeFenced(
    resource: string,
    guard: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<{ written: true } | { written: false; highestSeen: number }> {
    const [written, highest] = (await this.command(resource, 'writeFenced', () =>
      FENCED_WRITE_SCRIPT.run(this.client, [resource, guard], [fencingToken, value, ttl]),
    )) as [number | string, string];
    return Number(written) === 1
      ? { written: true }
      : { written: false, highestSeen: Number(highest) };
  }

  async isLocked(key: string): Promise<boolean> {
    return Number(await this.command(key, 'isLocked', () => this.client.exists(key))) === 1;
  }

  async subscribe(key: string, onRelease: (message: string) => void): Promise<() => void> {
    if (this.closed) throw new LockConnectionError(key, 'the lock store is closed');
    let listeners = this.listeners.get(key);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(key, listeners);
      const subscriber = this.subscriberConnection();
      const ready = subscriber.subscribe(key).finally(() => this.subscribing.delete(key));
      this.subscribing.set(key, ready);
    }
    listeners.add(onRelease);
    const unsubscribe = () => {
      if (!listeners.delete(onRelease) || listeners.size > 0) return;
      this.listeners.delete(key);
      if (!this.closed) this.subscriber?.unsubscribe(key).catch(() => undefined);
    };
    try {
      await this.command(key, 'subscribe', () => this.subscribing.get(key) ?? Promise.resolve());
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    const connections = [this.subscriber, this.options.ownsClient ? this.client : undefined];
    await Promise.all(connections.map((connection) => connection && closeConnection(connection)));
  }

  private subscriberConnection(): Redis | Cluster {
    if (!this.subscriber) {
      // Queue SUBSCRIBE until the new connection is ready, whatever the user's client says.
      const subscriber =
        this.client instanceof Cluster
          ? this.client.duplicate()
          : this.client.duplicate({ enableOfflineQueue: true });
      subscriber.on('error', (error) => this.options.onError('Redis subscriber error', error));
      subscriber.on('message', (channel: string, message: string) => {
        for (const listener of this.listeners.get(channel) ?? []) listener(message);
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /**
   * Runs one Redis call with the store's time limit, turning failures into
   * `LockConnectionError`. The returned promise carries the raw call as `late`, for callers that
   * must clean up after a reply that arrives past the limit.
   */
  private command<T>(
    key: string,
    operation: string,
    call: () => Promise<T>,
  ): Promise<T> & { late: Promise<T> } {
    const late = call();
    let timer: NodeJS.Timeout | undefined;
    const limited = new Promise<T>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LockConnectionError(
              key,
              `${operation} got no answer from Redis within ${this.options.commandTimeout} ms`,
            ),
          ),
        this.options.commandTimeout,
      );
      late.then(resolve, (error: unknown) =>
        reject(
          new LockConnectionError(key, `${operation} failed: ${messageOf(error)}`, {
            cause: error,
          }),
        ),
      );
    }).finally(() => clearTimeout(timer));
    return Object.assign(limited, { late });
  }
}

async function closeConnection(connection: Redis | Cluster): Promise<void> {
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

/** Creates the client the module owns from a URL or ioredis options. */
export function createRedisClient(config: string | RedisOptions): Redis {
  // ioredis keeps a closed connection's timer for `disconnectTimeout` (2 s by default) when
  // Redis was unreachable, which holds up the exit of an app that shuts down.
  const defaults: RedisOptions = { disconnectTimeout: 200 };
  return typeof config === 'string'
    ? new Redis(config, defaults)
    : new Redis({ ...defaults, ...config });
}
