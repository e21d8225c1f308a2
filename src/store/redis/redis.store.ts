import type { LockStoreCapabilities } from '../capabilities.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import { guardKeyOf, turnChannelsOf } from './redis-keys.js';
import { kindConflict } from '../lock-kind.js';
import { LockConnectionError } from '../../lock.errors.js';
import type { AcquireArgs } from './scripts/acquire.script.js';
import type { ForceReleaseArgs } from './scripts/force-release.script.js';
import type { ReleaseArgs } from './scripts/release.script.js';
import type { SharedAttempt } from './scripts/shared/shared-acquire.script.js';
import { TRANSFER_SCRIPT, transferKeysOf } from './scripts/transfer.script.js';
import type {
  AcquireAttempt,
  FencedWriteOutcome,
  LockEvent,
  LockStore,
  ReleaseOutcome,
  RenewalEntry,
  StoredLock,
  TransferOutcome,
} from '../lock-store.interface.js';
import type { ConnectionReport } from '../connection-report.js';
import type { RedisClientPort } from './redis-client.port.js';
import { claimOn, writeFencedOn } from './redis-fencing.js';
import { KindScripts } from './redis-kinds.js';
import { renewInChunks } from './redis-renewals.js';
import { PUBSUB, ReleaseChannels } from './release-channels.js';
import { ReplicaWait } from './replica-wait.js';
import { timedCommand, type TimedCommand } from '../timed-command.js';

/** How the module sets up a {@link RedisLockStore}. */
export interface RedisLockStoreOptions {
  client: RedisClientPort;
  /**
   * The module's `keyPrefix`: the fencing counters lie under it, one set per prefix, and errors
   * name a key without it, as the caller did.
   */
  keyPrefix: string;
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
  /**
   * Receives the connection problems that no caller is waiting for, and says in the log how
   * the connection fares: its failures, at a bounded rate, and its recovery.
   */
  report: ConnectionReport;
}

/**
 * The lock store on one Redis server, a Sentinel-managed master or a Redis Cluster (or a client
 * the user configured), with release notifications over pub/sub (see {@link ReleaseChannels}).
 */
export class RedisLockStore implements LockStore {
  readonly capabilities: LockStoreCapabilities;
  private readonly client: RedisClientPort;
  private readonly cluster: boolean;
  private readonly command: TimedCommand;
  private readonly channels: ReleaseChannels;
  private readonly scripts: KindScripts;
  /** With `waitForReplicas`: the WAITs after each acquisition and renewal. */
  private readonly replicas?: ReplicaWait;
  /** Removes the listeners this store added to the client. */
  private readonly unlisten: ((() => void) | undefined)[];

  constructor(private readonly options: RedisLockStoreOptions) {
    this.capabilities = {
      backend: 'Redis',
      queueing: options.fair,
      throttle: true,
      kinds: true,
      keepAlive: 'ttl',
      handles: true,
    };
    this.client = options.client;
    this.cluster = this.client.cluster;
    this.command = timedCommand(options.commandTimeout, options.keyPrefix, 'Redis');
    this.scripts = new KindScripts(this.client, options.keyPrefix, this.cluster);
    const { report } = options;
    // The subscriber's connection fails and comes back with the client's: one report for both.
    this.channels = new ReleaseChannels(
      this.client,
      this.command,
      (_, error) => report.failed(error),
      options.keyPrefix,
    );
    // A client the app passed in is listened to as well (and let go of at close).
    this.unlisten = [
      this.client.onError((error) => report.failed(error)),
      this.client.onReady?.(() => report.recovered()),
    ];
    if (options.waitForReplicas) {
      this.replicas = new ReplicaWait(
        this.client,
        options.waitForReplicas,
        this.command,
        options.keyPrefix,
      );
    }
  }

  /** Whether the connection is up or still being set up (false while it waits to reconnect). */
  get reachable(): boolean {
    return this.client.reachable;
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
    const args: AcquireArgs = [token, ttl, queue ? 1 : 0, publish, turnChannelsOf(key)];
    const reply = this.command(key, 'acquire', () => this.scripts.acquire(key, args));
    let attempt: SharedAttempt;
    try {
      attempt = await reply;
    } catch (error) {
      // An attempt that timed out may still reach Redis later and take the lock or a place in
      // its queue; once it has, give back whatever it took (release also leaves the queue).
      // Also when the client gives up on the answer itself (GLIDE's request timeout): Redis may
      // apply it all the same, and the release, sent after it on the same connection, comes
      // after it. A release of a token that took nothing changes nothing.
      const giveBack = () =>
        inUse() ? undefined : this.release(key, token).catch(() => undefined);
      void reply.late.then(giveBack, giveBack);
      throw error;
    }
    if ('heldAs' in attempt) {
      throw kindConflict(lockNameOf(this.options.keyPrefix, key), token, attempt.heldAs);
    }
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

  async renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    const connection = this.replicas?.connection ?? 0;
    const renewed = await renewInChunks(this.scripts, this.command, this.cluster, entries);
    if (entries.length > 0) await this.replicas?.replicated(entries[0].key, 'renew', connection);
    return renewed;
  }

  async transfer(
    key: string,
    token: string,
    newToken: string,
    ttl: number,
    fencingToken: number,
  ): Promise<TransferOutcome> {
    const connection = this.replicas?.connection ?? 0;
    const outcome = await this.command(key, 'transfer', () =>
      TRANSFER_SCRIPT.run(this.client, transferKeysOf(key), [token, newToken, ttl, fencingToken]),
    );
    if (outcome === 'transferred') await this.replicas?.replicated(key, 'transfer', connection);
    return outcome;
  }

  /**
   * RedLock: raises the fencing counter of `key` to at least `fencingToken`, so that the next
   * token this master issues for the key is greater, and records it as the fencing token of
   * the lock `token` holds here, if it does.
   */
  async raiseFence(key: string, fencingToken: number, token = ''): Promise<void> {
    await this.claim(key, token, 0, fencingToken);
  }

  /**
   * RedLock: takes the lock on `key` for `token` if it is free on this master, raising the
   * fencing counter as {@link raiseFence} does (which passes a ttl of 0, to take nothing).
   */
  async claim(key: string, token: string, ttl: number, fencingToken: number): Promise<void> {
    await this.command(key, 'claim', () =>
      claimOn(this.client, this.options.keyPrefix, this.cluster, { key, token, ttl, fencingToken }),
    );
  }

  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    const guard = guardKeyOf(resource);
    return this.command(resource, 'writeFenced', () =>
      writeFencedOn(this.client, { resource, guard, value, fencingToken, ttl }),
    );
  }

  async isLocked(key: string): Promise<boolean> {
    return (await this.command(key, 'isLocked', () => this.client.exists(key))) === 1;
  }

  async inspect(key: string): Promise<StoredLock> {
    return this.command(key, 'inspect', () => this.scripts.inspect(key));
  }

  async forceRelease(key: string): Promise<number> {
    const { publish } = this.cluster ? await this.channels.pubSub(key) : PUBSUB.plain;
    const args: ForceReleaseArgs = [publish, turnChannelsOf(key)];
    return this.command(key, 'forceRelease', () => this.scripts.forceRelease(key, args));
  }

  /**
   * `EXISTS` of the bare key prefix, which no lock has (a lock's name is never empty): a read
   * that a user confined to the prefix may make, on the node that serves the prefix's slot.
   * With `waitForReplicas`, then a WAIT as a lock's would be (shared with theirs): degraded
   * while too few replicas acknowledge the connection's writes in time.
   */
  async ping(): Promise<Record<string, unknown>> {
    const { keyPrefix } = this.options;
    // Waiting to reconnect, the client would hold the command until the timeout: say so now.
    if (!this.client.reachable) throw new LockConnectionError('', 'not connected to Redis');
    await this.command(keyPrefix, 'ping', () => this.client.exists(keyPrefix));
    if (!this.replicas) return {};
    const acknowledged = await this.replicas.acknowledged(keyPrefix);
    const wanted = this.replicas.wantedReplicas;
    const replicas = `${acknowledged}/${wanted} acknowledged`;
    if (acknowledged >= wanted) return { replicas };
    return { replicas, degraded: 'replicas lag behind waitForReplicas: locks are refused' };
  }

  /**
   * Listens on the key's channel and, in fair mode, on `instance`'s turn channel for the key:
   * without it, none of this store's callers queues, so none is ever announced a turn there.
   * With `waitForReplicas`, a turn's grant is not taken up from its notice: the release's write
   * was not waited for, so the waiter takes the lock with an attempt of its own, which waits.
   */
  subscribe(key: string, onEvent: (event: LockEvent) => void, instance?: string) {
    const turns = this.options.fair ? instance : undefined;
    if (!this.replicas) return this.channels.subscribe(key, onEvent, turns);
    const heard = (event: LockEvent) =>
      onEvent(event.type === 'turn' ? { type: 'turn', token: event.token } : event);
    return this.channels.subscribe(key, heard, turns);
  }

  async close(): Promise<void> {
    for (const unlisten of this.unlisten) unlisten?.();
    this.replicas?.close();
    await Promise.all([
      this.channels.close(),
      this.options.ownsClient ? this.client.close() : undefined,
    ]);
  }

  private async releaseScript(
    key: string,
    token: string,
    announce: boolean,
    successor: string,
  ): Promise<ReleaseOutcome> {
    const { publish } = this.cluster ? await this.channels.pubSub(key) : PUBSUB.plain;
    const args: ReleaseArgs = [token, announce ? 1 : 0, publish, successor, turnChannelsOf(key)];
    return this.command(key, 'release', () => this.scripts.release(key, args));
  }
}
