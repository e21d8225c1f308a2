import type { LockConnectionError } from '../lock.errors.js';
import type { AcquireAttempt } from '../store/lock-store.interface.js';

/** A caller waiting for a lock, as the waiting room sees it. */
export interface Waiter {
  /** The key as the caller named it. */
  readonly name: string;
  /** The token the caller's lock will carry. */
  readonly token: string;
  /** Monotonic ms after which the caller gives up. */
  readonly deadline: number;
  /** The caller runs inside work that holds a lock (shutdown lets it wait on a while). */
  readonly insideLock?: boolean;
  /** One atomic acquisition attempt with the caller's token and TTL. */
  attempt(): Promise<AcquireAttempt>;
  /**
   * When a grant whose validity counts from monotonic `validFrom` has run out already (the
   * answer came after the caller's TTL, and the lock may be somebody else's by now): the error
   * the caller fails with if its wait ends before a grant comes in time. `undefined` otherwise.
   */
  late(validFrom: number): LockConnectionError | undefined;
  /**
   * Whether the caller may hold the lock on the strength of a notice that the store granted it
   * with `fencingToken` (see `LockEvent`): from when and for how long, or `undefined` when its
   * next attempt must take the lock instead.
   */
  noticeGrant(fencingToken: number): { validFrom: number; validFor: number } | undefined;
  /**
   * The caller holds the lock, valid from monotonic `validFrom` for `validFor` ms (its TTL by
   * default): from when the request whose answer proved it (the caller's own attempt, or the
   * release that handed it over) was sent.
   */
  acquired(fencingToken: number, validFrom: number, validFor?: number): void;
  /** The caller gives up with `error`, and leaves the store's queue. */
  failed(error: unknown): void;
  /** The deadline passed; `pttl` is what the last attempt learned of the holder's TTL. */
  timedOut(pttl: number): void;
  /** An attempt succeeded after the caller had given up: the lock must be handed back. */
  abandoned(): void;
}
