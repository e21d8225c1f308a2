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
}

/**
 * Where the atomic work on locks happens. Keys are full keys (prefix included).
 * A store knows nothing of Nest; failures to reach the backend reject with `LockConnectionError`.
 */
export interface LockStore {
  /** One atomic attempt: set the lock if free and issue a fencing token. */
  acquire(key: string, token: string, ttl: number): Promise<AcquireAttempt>;
  /** Compare-and-delete; `false` when the lock no longer held this token. Wakes waiters. */
  release(key: string, token: string): Promise<boolean>;
  /** Compare-and-pexpire for each entry, in one round trip; `false` where the token is gone. */
  renew(entries: readonly RenewalEntry[]): Promise<boolean[]>;
  /** Whether anybody holds the lock. */
  isLocked(key: string): Promise<boolean>;
  /**
   * Calls `onRelease` whenever the lock on `key` is released, until the returned function is
   * called. Resolves once notifications are flowing, so that a release after it is not missed.
   */
  subscribe(key: string, onRelease: () => void): Promise<() => void>;
  /** Ends subscriptions and closes the connections the store owns. */
  close(): Promise<void>;
}
