/** Outcome of one acquisition attempt. */
export type AcquireAttempt =
  | { acquired: true; fencingToken: number }
  /** `pttl`: ms the current holder's lock still lives, or -1 when unknown or unbounded. */
  | { acquired: false; pttl: number };

/** One lock for a batched renewal. */
export interface RenewalEntry {
  key: string;
  token: string;
  ttl: number;
  fencingToken: number;
}

/** Outcome of a guarded write: refused ones report the highest fencing token seen. */
export type FencedWriteOutcome = { written: true } | { written: false; highestSeen: number };

/**
 * Where the atomic work on locks happens. Keys are full keys (prefix included).
 * A store knows nothing of Nest; failures to reach the backend reject with `LockConnectionError`.
 */
export interface LockStore {
  /**
   * One atomic attempt: take the lock if it is free and no queued waiter comes first, issuing a
   * fencing token. With `queue`, a caller that does not get the lock takes (or keeps, renewing
   * its lease) a place in the key's queue, and the lock is reserved for it in its turn, which
   * a {@link handoverTo} message announces: the caller's next attempt then takes it. If the
   * attempt times out but reaches the store later, what it took is given back, unless
   * `inUse()` says the caller holds the lock by then (it may have been handed over meanwhile)
   * or still waits for it: a waiter's next attempt, with the same token, finds it its own.
   * An attempt with a token that holds the lock (or a permit) already renews it, and answers
   * as a grant with a new fencing token.
   */
  acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt>;
  /**
   * Compare-and-delete; not `released` when the lock no longer held this token. The token also
   * leaves the queue. The lock goes to the head of the queue if anyone waits there: if that is
   * `successor` (a waiter of the releaser's own process, alive since the releaser is), it holds
   * the lock at once, with the TTL it asked for, from the moment this release was sent, and
   * the outcome carries its fencing token; anybody else is announced its turn.
   */
  release(key: string, token: string, successor?: string): Promise<ReleaseOutcome>;
  /**
   * Renews the queue leases of `tokens` that still have a place in `key`'s queue (never gives
   * one), as their attempts would: for waiters that wait behind another of their process, which
   * alone makes attempts. A store without a queue does nothing.
   */
  keepPlaces(key: string, tokens: readonly string[]): Promise<void>;
  /**
   * Compare-and-pexpire for each entry, in one round trip; `false` where the token is gone,
   * `undefined` where the store could not tell (RedLock: too few masters answered for it).
   */
  renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]>;
  /** Whether anybody holds the lock. */
  isLocked(key: string): Promise<boolean>;
  /**
   * Sets `resource` to `value` (for `ttl` ms; 0: no expiry) if `fencingToken` is at least the
   * highest token recorded in `guard`, and records it. Reports the highest token on refusal.
   */
  writeFenced(
    resource: string,
    guard: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome>;
  /**
   * Calls `onRelease` whenever the lock on `key` is released, until the returned function is
   * called, with a plain release message (`''`, or an id of the release), or with a
   * {@link handoverTo} message when the lock was reserved for a queued waiter.
   * Resolves once notifications are flowing, so that a release after it is not missed.
   */
  subscribe(key: string, onRelease: (message: string) => void): Promise<() => void>;
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
 * turn too late, costs the others.
 */
export const HANDOVER_LEASE = 500;

/** How a release message that reserves the lock for a queued waiter begins. */
export const HANDOVER_PREFIX = 'turn:';

/** The release message that announces `token`'s turn. */
export function handoverTo(token: string): string {
  return HANDOVER_PREFIX + token;
}

/** Reads a release message: the token whose turn it announces, or `undefined` for a plain release. */
export function parseHandover(message: string): string | undefined {
  return message.startsWith(HANDOVER_PREFIX) ? message.slice(HANDOVER_PREFIX.length) : undefined;
}
