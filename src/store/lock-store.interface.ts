import type { LockStoreCapabilities } from './capabilities.js';

/** Outcome of one acquisition attempt. */
export type AcquireAttempt =
  | { acquired: true; fencingToken: number }
  | {
      acquired: false;
      /** Ms the current holder's lock still lives, or -1 when unknown or unbounded. */
      pttl: number;
      /**
       * Ms left of the holder's throttle window, when the holder acquired with `holdFor` (its
       * token says so: see `holdForOfToken`) and its window is still open by the store's clock:
       * `min(holdFor, grant + holdFor − now)`, the grant dated by the holder's fencing token
       * (see `windowLeftOf`). With several holders (permits, read shares), only when every one
       * of them is such a throttle, until the soonest window closes. The caller is then early,
       * not in a conflict: its refusal is a throttle's (`throttled`, `retryAfterMs`). Absent
       * for any other refusal, and from a store that does not tell: a plain conflict.
       */
      windowLeft?: number;
    };

/**
 * What a store tells the callers that wait for a key. An event proves nothing by itself, as it
 * may come late: a waiter that hears one makes an attempt, whose answer it can date.
 */
export type LockEvent =
  /** The lock (or a permit) was released: whoever waits may try. `id` names the release. */
  | { readonly type: 'released'; readonly id?: string }
  /**
   * The lock (or a permit) is reserved for the waiter with `token`, for the handover lease at
   * most: its next attempt takes it, with a TTL and a fencing token of its own.
   */
  | { readonly type: 'turn'; readonly token: string };

/** One lock for a batched renewal. */
export interface RenewalEntry {
  key: string;
  token: string;
  ttl: number;
  fencingToken: number;
}

/** One holder of a key, as the store keeps it. */
export interface StoredHold {
  /** Its token, which names its kind and its instance (see `kindOfToken`, `ownerOfToken`). */
  token: string;
  /** How long its hold still lives, in ms; -1 when it lasts as long as its session. */
  ttlMs: number;
  /**
   * The fencing token it was given; absent while the lock is only reserved for a queued waiter
   * that has not taken it yet (see `HANDOVER_LEASE`), or where the store has no record of it.
   */
  fencingToken?: number;
}

/** What the store keeps of a key: who holds it, and how many keep a place in its line. */
export interface StoredLock {
  holders: StoredHold[];
  /** Waiters with a live place in the store's line (0 where the store keeps none). */
  waiting: number;
}

/**
 * What a {@link LockStore.transfer} did: the hold moved to the new token; or nothing changed,
 * because the key no longer holds the token (`gone`: expired, released, or moved already), or
 * holds it with another fencing token than the one given (`fence-mismatch`).
 */
export type TransferOutcome = 'transferred' | 'gone' | 'fence-mismatch';

/** The arguments of {@link LockStore.transfer}, in its order, for the stores that pass them on. */
export type TransferParams = Parameters<NonNullable<LockStore['transfer']>>;

/** Outcome of a guarded write: refused ones report the highest fencing token seen. */
export type FencedWriteOutcome = { written: true } | { written: false; highestSeen: number };

/**
 * Where the atomic work on locks happens. Keys are full keys (prefix included).
 * A store knows nothing of Nest; failures to reach the backend reject with `LockConnectionError`.
 *
 * Six methods make a store: {@link acquire}, {@link release}, {@link renew}, {@link subscribe},
 * {@link ping} and {@link close}. The others are facets a store may have: the library uses
 * each where the store has it, and refuses the call that needs one it lacks (see `facetOf`).
 */
export interface LockStore {
  /** What the store can do; what it cannot is refused before it is asked (see `refuseUnsupported`). */
  readonly capabilities: LockStoreCapabilities;
  /**
   * `false` when the store's client already knows it cannot reach the store (its connection
   * failed and it waits to reconnect): a caller that may not wait is refused at once with a
   * `LockConnectionError` instead of after `commandTimeout`. Absent: the store cannot tell.
   */
  readonly reachable?: boolean;
  /**
   * One atomic attempt: take the lock if it is free and no queued waiter comes first, issuing a
   * fencing token. With `queue`, a caller that does not get the lock takes (or keeps, renewing
   * its lease) a place in the key's queue, and the lock is reserved for it in its turn, which
   * a `turn` {@link LockEvent} announces: the caller's next attempt then takes it. If the
   * attempt times out but reaches the store later, what it took is given back, unless
   * `inUse()` says the caller holds the lock by then (it may have been handed over meanwhile)
   * or still waits for it: a waiter's next attempt, with the same token, finds it its own.
   * An attempt with a token that holds the lock (or a permit) already renews it, and answers
   * as a grant with a new fencing token (on ZooKeeper, the same one: a node's fencing token is
   * the zxid of its creation).
   */
  acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt>;
  /**
   * Compare-and-delete; not `released` when the lock no longer held this token (ZooKeeper
   * answers `released` for a waiter's node it deletes, which the engine does not read). The
   * token also leaves the queue. The lock goes to the head of the queue if anyone waits there: if that is
   * `successor` (a waiter of the releaser's own process, alive since the releaser is), it holds
   * the lock at once, with the TTL it asked for, from the moment this release was sent, and
   * the outcome carries its fencing token; anybody else is announced its turn.
   */
  release(key: string, token: string, successor?: string): Promise<ReleaseOutcome>;
  /**
   * Compare-and-pexpire for each entry, in one round trip; `false` where the token is gone,
   * `undefined` where the store could not tell (RedLock: too few masters answered for it).
   */
  renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]>;
  /**
   * Throttle mode (`holdFor`), for a store that dates a throttle's window by its own clock:
   * ends the hold of `token` and keeps `key` taken for `keepFor` ms more, what is left of
   * `holdFor` since the lock was granted by the engine's clock (counted from when the request
   * that granted it was sent), the store's clock dating when that time starts; `false` when the
   * lock no longer held this token. A store without it is asked to {@link renew} the lock for
   * `keepFor`, and lets the TTL end it.
   */
  holdWindow?(key: string, token: string, keepFor: number): Promise<boolean>;
  /**
   * `Lock.handOff`: this instance let go of `token` on `key` without releasing it, after a last
   * renewal; another instance adopts it, and this one renews and releases it no more. A store
   * that puts a confirmed lock back where a master missed it (RedLock) must not do so for this
   * token once its answers come in, as it does not for a released one.
   */
  handedOff?(key: string, token: string): void;
  /**
   * `LockService.adopt`: one atomic compare-and-swap that moves the hold of `token` on `key` to
   * `newToken` (a token of the same kind, made by the adopting instance, which it names), for
   * `ttl` ms from this request, keeping the hold's fencing token: only if `key` holds `token`
   * with the fencing token `fencingToken`. A hold without a fencing token (a lock only reserved
   * for a waiter) is `gone`. Once it moved, `token` renews and releases nothing: a second
   * adoption of the same handle, in any instance, finds it `gone`, and `inspect` names the
   * adopter. The same transfer sent again (a client that resends a command whose answer was
   * lost) finds the hold on `newToken` with `fencingToken`, and answers `transferred`. When the
   * call fails, the library releases `newToken`, in case the transfer reached the store all
   * the same.
   *
   * A store without it still hands locks over (`capabilities.handles`): `adopt` reads the
   * hold's fencing token with {@link inspect}, then {@link renew}s the handle's own token, so
   * the lock keeps the token, and the instance that `inspect` names, of the instance that took
   * it, and two instances that adopt one handle would both renew it and both hold the lock.
   */
  transfer?(
    key: string,
    token: string,
    newToken: string,
    ttl: number,
    fencingToken: number,
  ): Promise<TransferOutcome>;
  /** `LockService.isLocked`: whether anybody holds the lock (or a throttle's window keeps it taken). */
  isLocked?(key: string): Promise<boolean>;
  /**
   * `LockService.inspect`, a leader's identity, and `adopt` where the store has no
   * {@link transfer}: who holds `key` and how many wait for it, as the store sees it at one
   * moment.
   */
  inspect?(key: string): Promise<StoredLock>;
  /**
   * Frees `key` whoever holds it, as their releases would (the head of the line gets its
   * turn): their next renewal or release finds their token gone. Resolves how many holders it
   * evicted.
   */
  forceRelease?(key: string): Promise<number>;
  /**
   * One cheap round trip to the backend, for health checks: resolves what the store can tell of
   * it (RedLock: how many masters answered), rejects with `LockConnectionError` when it gets no
   * answer in time. A `degraded` entry, a sentence, says that the backend answers but is
   * impaired (Redis: replicas lag behind `waitForReplicas`): the health check reports it.
   */
  ping(): Promise<Record<string, unknown>>;
  /** What the store knows of its connection without asking (ZooKeeper: its session's state). */
  connectionDetails?(): Record<string, unknown>;
  /**
   * `LockService.writeFenced`: sets `resource` to `value` (for `ttl` ms; 0: no expiry) if
   * `fencingToken` is at least the highest token recorded for `resource`, and records it, in
   * one atomic step. Reports the highest token on refusal.
   */
  writeFenced?(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome>;
  /**
   * Calls `onEvent` when the lock on `key` is released while callers wait for it, until the
   * returned function is called: with a `released` event, or with a `turn` event when the lock
   * was reserved for a queued waiter. A store with a line may announce nothing when nobody is
   * in it, and ZooKeeper tells the waiters of this store only: what the engine counts on is
   * that a subscriber in a waiter's own store hears that waiter's turn.
   * `instance` is what the tokens of the subscriber's callers end with (see `ownerMark`): a
   * store that wakes only the next caller delivers a `turn` to the subscribers of the instance
   * its token names, not to every process that waits for the key (a subscriber that names no
   * instance may then hear only the turns of tokens that name none).
   * Resolves once notifications are flowing, so that a release after it is not missed.
   */
  subscribe(
    key: string,
    onEvent: (event: LockEvent) => void,
    instance?: string,
  ): Promise<() => void>;
  /**
   * Called once the application has booted: starts connecting, now, a store that would
   * otherwise connect on its first call, so that its first callers do not wait for a handshake
   * while callers of other processes go ahead of them. It waits for nothing and fails on
   * nothing: an app whose store is down boots, and the store reports the outage as it does any.
   */
  open?(): void;
  /** Ends subscriptions and closes the connections the store owns. */
  close(): Promise<void>;
}

/** What a release did. */
export interface ReleaseOutcome {
  /** The lock held the releaser's token, and no longer does. */
  released: boolean;
  /** The fencing token of the successor that now holds the lock, when it went to one. */
  successorFencingToken?: number;
}

/** How long a queued waiter keeps its place without checking in again, in ms. */
export const QUEUE_LEASE = 3_000;

/**
 * How long a lock reserved for a queued waiter in another process waits for that waiter to take
 * it, in ms (at most the waiter's TTL): what a waiter that died while queued, or hears of its
 * turn too late, keeps the lock from the others.
 */
export const HANDOVER_LEASE = 500;
