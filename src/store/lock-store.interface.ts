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

/**
 * Where the atomic work on locks happens. Keys are full keys (prefix included).
 * A store knows nothing of Nest; failures to reach the backend reject with `LockConnectionError`.
 */
export interface LockStore {
  /**
   * A lock handed over by a release must be confirmed by an acquisition attempt of its own
   * before it counts (the store waits for replicas on every acquisition).
   */
  readonly confirmsHandovers: boolean;
  /**
   * One atomic attempt: take the lock if it is free and no queued waiter comes first, issuing a
   * fencing token. With `queue`, a caller that does not get the lock takes (or keeps, renewing
   * its lease) a place in the key's queue, and the lock is handed to it in its turn. If the
   * attempt times out but reaches the store later, what it took is given back, unless
   * `inUse()` says the caller holds the lock by then (it may have been handed over meanwhile).
   */
  acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt>;
  /**
   * Compare-and-delete; `false` when the lock no longer held this token. The token also leaves
   * the queue. The lock goes to the head of the queue if anyone waits there.
   */
  release(key: string, token: string): Promise<boolean>;
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
  ): Promise<{ written: true } | { written: false; highestSeen: number }>;
  /**
   * Calls `onRelease` whenever the lock on `key` is released, until the returned function is
   * called, with a plain release message (`''`, or an id of the release without a space), or
   * with a {@link Handover} message when the lock went to a queued waiter.
   * Resolves once notifications are flowing, so that a release after it is not missed.
   */
  subscribe(key: string, onRelease: (message: string) => void): Promise<() => void>;
  /** Ends subscriptions and closes the connections the store owns. */
  close(): Promise<void>;
}

/** How long a queued waiter keeps its place without checking in again, in ms. */
export const QUEUE_LEASE = 3_000;

/** A release message that hands the lock to a queued waiter. */
export interface Handover {
  token: string;
  fencingToken: number;
}

/** Reads a release message: a {@link Handover}, or `undefined` for a plain release. */
export function parseHandover(message: string): Handover | undefined {
  const [token, fence] = message.split(' ');
  return fence === undefined ? undefined : { token, fencingToken: Number(fence) };
}

/** Writes the release message that hands the lock to `token`. */
export function formatHandover({ token, fencingToken }: Handover): string {
  return `${token} ${fencingToken}`;
}
