/** A caller waiting for a lock, as the room of its key sees it (see `KeyRoom`). */
export interface Waiter {
  /** The key as the caller named it. */
  readonly name: string;
  /** The token the caller's lock will carry, which the store's line knows it by. */
  readonly token: string;
  /** The caller runs inside work that holds a lock (shutdown lets it wait on a while). */
  readonly insideLock?: boolean;
  /**
   * Something may have changed for the caller (a release, its turn, notifications that began to
   * flow): it makes an attempt now, or, if one is on its way, again once that one is answered.
   */
  wake(): void;
  /** A wake-up came that no attempt of the caller's has answered yet. */
  readonly woken: boolean;
  /** An attempt of the caller's is out (it may have run before the latest release, or after). */
  readonly attempting: boolean;
  /**
   * A release by this process gave the caller the lock with `fencingToken`, valid from monotonic
   * `validFrom` (when that release was sent). `false` when the caller no longer waits, and the
   * lock must then be released.
   */
  handOver(fencingToken: number, validFrom: number): boolean;
  /** The caller gives up with `error` (shutdown, or notifications the store refused). */
  fail(error: Error): void;
}
