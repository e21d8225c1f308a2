import type { Cluster, Redis } from 'ioredis';
import { isClusterClient } from '../../options/redis-topology.js';
import { slotOf } from '../../keys/cluster-slots.js';
import { fenceKeyOf, scriptKeysOf, sharedScriptKeysOf, sideKeyOf } from '../../keys/lock-keys.js';
import { isShared, kindConflict } from '../lock-kind.js';
import { ACQUIRE_SCRIPT, type AcquireArgs } from './scripts/acquire.script.js';
import { FENCED_WRITE_SCRIPT } from './scripts/fenced-write.script.js';
import { CLAIM_SCRIPT } from './scripts/claim.script.js';
import { RELEASE_SCRIPT, type ReleaseArgs } from './scripts/release.script.js';
import { KEEP_PLACES_SCRIPT } from './scripts/keep-places.script.js';
import { RENEW_SCRIPT } from './scripts/renew.script.js';
import {
  SHARED_ACQUIRE_SCRIPT,
  type SharedAttempt,
} from './scripts/shared/shared-acquire.script.js';
import { SHARED_RELEASE_SCRIPT } from './scripts/shared/shared-release.script.js';
import { SHARED_RENEW_SCRIPT } from './scripts/shared/shared-renew.script.js';
import {
  QUEUE_LEASE,
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
} from '../lock-store.interface.js';
import { closeConnection } from './redis-clients.js';
import { PUBSUB, ReleaseChannels } from './release-channels.js';
import { ReplicaWait } from './replica-wait.js';
import { timedCommand, type TimedCommand } from './timed-command.js';

/** Keys per renewal script call, so that one call never blocks Redis for long. */
const RENEW_CHUNK = 500;
/**
 * Renewal calls written in one turn of the event loop: up to 2,000 locks due renew in one
 * pipelined round trip, and more never hold the loop for longer than a few milliseconds.
 */
const CHUNKS_PER_TURN = 4;

/** How the module sets up a {@link RedisLockStore}. */
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

/**
 * The lock store on one Redis server, a Sentinel-managed master or a Redis Cluster (or a client
 * the user configured), with release notifications over pub/sub (see {@link ReleaseChannels}).
 */
export class RedisLockStore implements LockStore {
  private readonly client: Redis | Cluster;
  private readonly cluster: boolean;
  private readonly command: TimedCommand;
  private readonly channels: ReleaseChannels;
  /** With `waitForReplicas`: the WAITs after each acquisition and renewal. */
  private readonly replicas?: ReplicaWait;

  constructor(private readonly options: RedisLockStoreOptions) {
    this.client = options.client;
    this.cluster = isClusterClient(this.client);
    this.command = timedCommand(options.commandTimeout);
    this.channels = new ReleaseChannels(this.client, this.command, options.onError);
    if (options.ownsClient) {
      this.client.on('error', (error) => options.onError('Redis connection error', error));
    }
    if (options.waitForReplicas) {
      this.replicas = new ReplicaWait(this.client, options.waitForReplicas, this.command);
    }
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
    const { publish } = this.cluster ? await this.channels.pubSub(key) : PUBSUB.plain;
    const connection = this.replicas?.connection ?? 0;
    const args: AcquireArgs = [token, ttl, queue ? 1 : 0, publish];
    const reply = this.command(key, 'acquire', (): Promise<SharedAttempt> =>
      isShared(token)
        ? SHARED_ACQUIRE_SCRIPT.run(this.client, sharedScriptKeysOf(key, this.cluster), args)
        : ACQUIRE_SCRIPT.run(this.client, scriptKeysOf(key, this.cluster), args),
    );
    let attempt: SharedAttempt;
    try {
      attempt = await reply;
    } catch (error) {
      // An attempt that timed out may still reach Redis later and take the lock or a place in
      // its queue; once it has, give back whatever it took (release also leaves the queue).
      void reply.late.then(
        () => (inUse() ? undefined : this.release(key, token).catch(() => undefined)),
        () => undefined,
      );
      throw error;
    }
    if ('heldAs' in attempt) throw kindConflict(key, token, attempt.heldAs);
    if (!attempt.acquired || !this.replicas) return attempt;
    try {
      await this.replicas.replicated(key, 'acquire', connection);
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

  async keepPlaces(key: string, tokens: readonly string[]): Promise<void> {
    for (const shared of [false, true]) {
      const ofKind = tokens.filter((token) => isShared(token) === shared);
      if (ofKind.length === 0) continue;
      const places = sideKeyOf(key, shared ? 'places' : 'waiters');
      await this.command(key, 'keep places', () =>
        KEEP_PLACES_SCRIPT.run(this.client, [places], [QUEUE_LEASE, ...ofKind]),
      );
    }
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    // A script's keys must share one hash slot on a Cluster, so renewals are batched per slot
    // there (ioredis still pipelines the calls to each node); elsewhere, in chunks.
    const batches = this.cluster ? [...groupBySlot(entries).values()] : [entries];
    const connection = this.replicas?.connection ?? 0;
    const calls: Promise<boolean[]>[] = [];
    for (const batch of batches) {
      for (let i = 0; i < batch.length; i += RENEW_CHUNK) {
        // Writing a chunk's command takes the event loop most of a millisecond: with many locks
        // due at once, let the application's other work run between runs of chunks. A chunk
        // that fails meanwhile is not an unhandled rejection: Promise.all below has it.
        if (calls.length > 0 && calls.length % CHUNKS_PER_TURN === 0) {
          await new Promise(setImmediate);
        }
        const call = this.renewChunk(batch.slice(i, i + RENEW_CHUNK));
        call.catch(() => undefined);
        calls.push(call);
      }
    }
    const replies = (await Promise.all(calls)).flat();
    if (entries.length > 0) await this.replicas?.replicated(entries[0].key, 'renew', connection);
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
        [fencingToken, token, ttl],
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

  subscribe(key: string, onRelease: (message: string) => void): Promise<() => void> {
    return this.channels.subscribe(key, onRelease);
  }

  async close(): Promise<void> {
    this.replicas?.close();
    await Promise.all([
      this.channels.close(),
      this.options.ownsClient ? closeConnection(this.client) : undefined,
    ]);
  }

  private async releaseScript(
    key: string,
    token: string,
    announce: boolean,
    successor: string,
  ): Promise<ReleaseOutcome> {
    const { publish } = this.cluster ? await this.channels.pubSub(key) : PUBSUB.plain;
    const args: ReleaseArgs = [token, announce ? 1 : 0, publish, successor];
    return this.command(key, 'release', () =>
      isShared(token)
        ? SHARED_RELEASE_SCRIPT.run(this.client, sharedScriptKeysOf(key, this.cluster), args)
        : RELEASE_SCRIPT.run(this.client, scriptKeysOf(key, this.cluster), args),
    );
  }

  private renewChunk(chunk: readonly RenewalEntry[]): Promise<boolean[]> {
    return this.command(chunk[0].key, 'renew', async () => {
      const shared = chunk.filter((entry) => isShared(entry.token));
      if (shared.length === 0) {
        return RENEW_SCRIPT.run(
          this.client,
          chunk.map((entry) => entry.key),
          chunk.flatMap((entry) => [entry.token, entry.ttl]),
        );
      }
      // Semaphore permits and read-write shares renew with a script of their own, in the same
      // round trip (ioredis pipelines the two calls); the replies go back in the chunk's order.
      const mutexes = chunk.filter((entry) => !isShared(entry.token));
      const [mutexReplies, sharedReplies] = await Promise.all([
        mutexes.length === 0
          ? []
          : RENEW_SCRIPT.run(
              this.client,
              mutexes.map((entry) => entry.key),
              mutexes.flatMap((entry) => [entry.token, entry.ttl]),
            ),
        SHARED_RENEW_SCRIPT.run(
          this.client,
          shared.flatMap((entry) => [entry.key, sideKeyOf(entry.key, 'holders')]),
          shared.flatMap((entry) => [entry.token, entry.ttl]),
        ),
      ]);
      const replies = new Map<RenewalEntry, boolean>();
      mutexes.forEach((entry, i) => replies.set(entry, mutexReplies[i]));
      shared.forEach((entry, i) => replies.set(entry, sharedReplies[i]));
      return chunk.map((entry) => replies.get(entry) === true);
    });
  }
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
