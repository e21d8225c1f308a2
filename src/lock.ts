/**
 * A held lock. Obtained from {@link LockService.acquire}, {@link LockService.tryAcquire},
 * {@link LockService.using} or, inside a `@WithLock` method, {@link LockService.current}.
 */
export interface Lock {
  /** The full Redis key (with the module's `keyPrefix`). */
  readonly key: string;
  /** The random 128-bit value that proves ownership in Redis. Never log it. */
  readonly token: string;
  /**
   * A number strictly greater than every fencing token issued before for this key, also after
   * the lock expired or was deleted and after the app restarted. Pass it to the resource the
   * lock protects, so that the resource can reject a holder that lost the lock without knowing.
   */
  readonly fencingToken: number;
  /** Aborted, with a `LockLostError` as its reason, as soon as ownership is known lost. */
  readonly signal: AbortSignal;
  /** Deletes the lock if it is still ours; `false` when it was not (expired, taken, released). */
  release(): Promise<boolean>;
  /**
   * Resets the lock's time-to-live to `ttl` ms (default: the TTL it was acquired with) if it is
   * still ours; `false` when it was not, in which case the signal is aborted.
   */
  extend(ttl?: number): Promise<boolean>;
}
