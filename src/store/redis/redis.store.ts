import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { FENCE_TTL } from '../../lock.constants.js';
import { LockConnectionError, LockReplicationError, messageOf } from '../../lock.errors.js';
import { slotOf } from '../../keys/cluster-slots.js';
import { fenceKeyOf, scriptKeysOf } from '../../keys/lock-keys.js';
import type { RedisClusterConfig } from '../../options/lock-options.interface.js';
import { ACQUIRE_SCRIPT } from './scripts/acquire.script.js';
import { FENCED_WRITE_SCRIPT } from './scripts/fenced-write.script.js';
import { CLAIM_SCRIPT } from './scripts/claim.script.js';
import { RELEASE_SCRIPT } from './scripts/release.script.js';
import { RENEW_SCRIPT } from './scripts/renew.script.js';
import {
  HANDOVER_LEASE,
  QUEUE_LEASE,
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
} from '../lock-store.interface.js';

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
  /** Wait for this many replicas to acknowledge each acquisition and renewal (`WAIT`). */
  waitForReplicas?: { replicas: number; timeout: number };
  /** Receives connection problems that no caller is waiting for. */
  onError: (message: string, error: unknown) => void;
}

/** The ways to publish and subscribe: plain pub/sub, or sharded pub/sub on a Cluster. */
const PUBSUB = {
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
 * The lock store on one Redis server, a Sentinel-managed master or a Redis Cluster (or a client
 * the user configured), with release notifications over pub/sub: one subscriber connection per
 * store, and one channel per key that has waiters in this process, named after the key. On a
 * Cluster whose servers have it (Redis 7), the channels are sharded: a release is published
 * only to the shard that owns the lock's slot instead of to every node.
 */
export class RedisLockStore implements LockStore {
  private readonly client: Redis | Cluster;
  private readonly cluster: boolean;
  private subscriber?: Redis | Cluster;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();
  /** Settled on the first command that needs it: which pub/sub the store uses. */
  private pubsub?: Promise<PubSub>;
  private closed = false;
  /**
   * With `waitForReplicas`: how many times the connection has closed. A WAIT only vouches for
   * writes made on its own connection; one sent after a reconnect (to a new master, say) would
   * vouch for nothing.
   */
  private connection = 0;
  private readonly countClose = () => void this.connection++;
  /** The WAIT on its way, and the one queued behind it for the writes made meanwhile. */
  private waitSent?: Promise<number>;
  private waitNext?: Promise<number>;

  constructor(private readonly options: RedisLockStoreOptions) {
    this.client = options.client;
    this.cluster = this.client instanceof Cluster;
    if (options.ownsClient) {
      this.client.on('error', (error) => options.onError('Redis connection error', error));
    }
    if (options.waitForReplicas) this.client.on('close', this.countClose);
  }

  /** Whether the connection is up or still being set up (false while it waits to reconnect). */
  get reachable(): boolean {
    return !['reconnecting', 'close', 'end'].includes(this.client.status);
  }

  async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    // Not awaited off a Cluster: an await per command is measurable on the hot path.
    const { publish } = this.cluster ? await this.pubSub(key) : PUBSUB.plain;
    const connection = this.connection;
    const reply = this.command(key, 'acquire', () =>
      ACQUIRE_SCRIPT.run(this.client, scriptKeysOf(key, this.cluster), [
        token,
        ttl,
        FENCE_TTL,
        key,
        queue ? 1 : 0,
        QUEUE_LEASE,
        publish,
        HANDOVER_LEASE,
      ]),
    );
    const attempt = await reply.catch((error) => {
      // An attempt that timed out may still reach Redis later and take the lock or a place in
      // its queue; once it has, give back whatever it took (release also leaves the queue).
      void reply.late.then(
        () => (inUse() ? undefined : this.release(key, token).catch(() => undefined)),
        () => undefined,
      );
      throw error;
    });
    if (!attempt.acquired) return attempt;
    try {
      await this.replicated(key, 'acquire', connection);
    } catch (error) {
      if (!inUse()) await this.release(key, token).catch(() => undefined);
      throw error;
    }
    return attempt;
  }

  /**
   * With `waitForReplicas`, the lock never goes to the successor at once: the release's write
   * was not waited for, so the successor takes it with an attempt of its own, which waits.
   */
  async release(key: string, token: string, successor = ''): Promise<ReleaseOutcome> {
    return this.releaseScript(
      key,
      token,
      !this.options.fair,
      this.options.waitForReplicas ? '' : successor,
    );
  }

  /**
   * RedLock: takes back what a failed attempt may have been granted, without announcing it.
   * Announcing would wake the other contenders of a split vote, and this caller, all at once,
   * to split the vote again; they retry after their jittered fallback delay instead.
   */
  async withdraw(key: string, token: string): Promise<void> {
    await this.releaseScript(key, token, false, '');
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    // A script's keys must share one hash slot on a Cluster, so renewals are batched per slot
    // there (ioredis still pipelines the calls to each node); elsewhere, in chunks.
    const batches = this.cluster ? [...groupBySlot(entries).values()] : [entries];
    const connection = this.connection;
    const calls: Promise<boolean[]>[] = [];
    for (const batch of batches) {
      for (let i = 0; i < batch.length; i += RENEW_CHUNK) {
        calls.push(this.renewChunk(batch.slice(i, i + RENEW_CHUNK)));
      }
    }
    const replies = (await Promise.all(calls)).flat();
    if (entries.length > 0) await this.replicated(entries[0].key, 'renew', connection);
    if (!this.cluster) return replies;
    // The replies come in slot order: put them back in the order of the entries.
    const renewed = new Map(batches.flat().map((entry, i) => [entry, replies[i]]));
    return entries.map((entry) => renewed.get(entry) === true);
  }

  /**
   * RedLock: raises the fencing counter of `key` to at least `fencingToken`, so that the next
   * token this master issues for the key is greater.
   */
  async raiseFence(key: string, fencingToken: number): Promise<void> {
    await this.claim(key, '', 0, fencingToken);
  }

  /**
   * RedLock: takes the lock on `key` for `token` if it is free on this master, raising the
   * fencing counter as {@link raiseFence} does (which passes no token, to only raise it).
   */
  async claim(key: string, token: string, ttl: number, fencingToken: number): Promise<void> {
    await this.command(key, 'claim', () =>
      CLAIM_SCRIPT.run(
        this.client,
        [key, fenceKeyOf(key, this.cluster)],
        [fencingToken, FENCE_TTL, token, ttl],
      ),
    );
  }

  async writeFenced(
    resource: string,
    guard: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    return this.command(resource, 'writeFenced', () =>
      FENCED_WRITE_SCRIPT.run(this.client, [resource, guard], [fencingToken, value, ttl]),
    );
  }

  async isLocked(key: string): Promise<boolean> {
    return Number(await this.command(key, 'isLocked', () => this.client.exists(key))) === 1;
  }

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

  async close(): Promise<void> {
    this.closed = true;
    this.client.off('close', this.countClose);
    this.listeners.clear();
    const connections = [this.subscriber, this.options.ownsClient ? this.client : undefined];
    await Promise.all(connections.map((connection) => connection && closeConnection(connection)));
  }

  private subscriberConnection(pubsub: PubSub): Redis | Cluster {
    if (!this.subscriber) {
      // Queue SUBSCRIBE until the new connection is ready, whatever the user's client says. A
      // Cluster subscribes to sharded channels through one connection per master.
      // It connects at once (it is made when a caller starts to wait, after the boot): a lazy
      // subscriber would send SUBSCRIBE before its ready check, which subscriber mode refuses.
      const subscriber =
        this.client instanceof Cluster
          ? this.client.duplicate([], {
              shardedSubscribers: pubsub === PUBSUB.sharded,
              lazyConnect: false,
            })
          : this.client.duplicate({ enableOfflineQueue: true, lazyConnect: false });
      subscriber.on('error', (error) => this.options.onError('Redis subscriber error', error));
      subscriber.on(pubsub.event, (channel: string, message: string) => {
        for (const listener of this.listeners.get(channel) ?? []) listener(message);
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /**
   * Sharded pub/sub on a Cluster whose servers know SPUBLISH (Redis 7 and later) and whose
   * ioredis can subscribe to each shard (5.6 and later: it has the `shardedSubscribers`
   * option), plain pub/sub everywhere else. Asked once, on the first command that publishes
   * or subscribes.
   */
  private pubSub(key: string): Promise<PubSub> {
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

  private async releaseScript(
    key: string,
    token: string,
    announce: boolean,
    successor: string,
  ): Promise<ReleaseOutcome> {
    const { publish } = this.cluster ? await this.pubSub(key) : PUBSUB.plain;
    return this.command(key, 'release', () =>
      RELEASE_SCRIPT.run(this.client, scriptKeysOf(key, this.cluster), [
        token,
        key,
        FENCE_TTL,
        announce ? 1 : 0,
        publish,
        HANDOVER_LEASE,
        successor,
      ]),
    );
  }

  private renewChunk(chunk: readonly RenewalEntry[]): Promise<boolean[]> {
    return this.command(chunk[0].key, 'renew', () =>
      RENEW_SCRIPT.run(
        this.client,
        chunk.map((entry) => entry.key),
        chunk.flatMap((entry) => [entry.token, entry.ttl]),
      ),
    );
  }

  /**
   * With `waitForReplicas`, waits until enough replicas acknowledged the writes made on the
   * connection so far, ours included, which were sent while the connection was `connection`.
   * @throws LockReplicationError when too few did within the timeout, or the connection was
   *   replaced meanwhile
   */
  private async replicated(key: string, operation: string, connection: number): Promise<void> {
    const wanted = this.options.waitForReplicas;
    if (!wanted) return;
    const acknowledged = await this.command(key, `${operation} WAIT`, () => this.sharedWait());
    const counted = this.connection === connection ? acknowledged : 0;
    if (counted < wanted.replicas) {
      throw new LockReplicationError(key, operation, counted, wanted.replicas, wanted.timeout);
    }
  }

  /**
   * A WAIT that covers every write made on the connection before this call. WAIT blocks the
   * connection while it waits, so concurrent callers share: one WAIT on its way covers the
   * writes sent before it, and those made meanwhile share the next one, sent when it returns.
   */
  private sharedWait(): Promise<number> {
    if (!this.waitSent) return this.sendWait();
    this.waitNext ??= this.waitSent
      .catch(() => undefined)
      .then(() => {
        this.waitNext = undefined;
        return this.sendWait();
      });
    return this.waitNext;
  }

  private sendWait(): Promise<number> {
    const { replicas, timeout } = this.options.waitForReplicas as {
      replicas: number;
      timeout: number;
    };
    const sent = (this.client as Redis).wait(replicas, timeout).then(Number);
    this.waitSent = sent;
    const done = () => {
      if (this.waitSent === sent) this.waitSent = undefined;
    };
    sent.then(done, done);
    return sent;
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

function groupBySlot(entries: readonly RenewalEntry[]): Map<number, RenewalEntry[]> {
  const slots = new Map<number, RenewalEntry[]>();
  for (const entry of entries) {
    const slot = slotOf(entry.key);
    const batch = slots.get(slot);
    if (batch) batch.push(entry);
    else slots.set(slot, [entry]);
  }
  return slots;
}
