/**
 * A held lock. Obtained from {@link LockService.acquire}, {@link LockService.tryAcquire},
 * {@link LockService.using} or, inside a `@WithLock` method, {@link LockService.current}.
 */
export interface Lock {
  /** The full key in the store (prefix included). */
  readonly key: string;
  /** The random 128-bit value that proves ownership in the store. Never log it. */
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
  /**
   * Gives the lock to another process, which takes it over with `LockService.adopt(handle)`:
   * renews it once (so that the handle starts with a whole TTL and is known valid), then this
   * process stops renewing it, aborts `signal` with a `LockLostError` saying that the lock was
   * handed off, and its `release()` answers `false` without touching the store. The handle
   * carries the token: keep it as secret as the token until it is adopted, which moves the
   * hold to a token of the adopter's (see docs/handles.md).
   * @throws LockLostError when the lock was lost or released before it could be handed off
   * @throws LockOptionsError on a store that cannot hand locks off (ZooKeeper), or for a
   *   `holdFor` throttle; the lock then stays held here
   */
  handOff(): Promise<LockHandle>;
  /**
   * Throws the `LockLostError` at once when the lock no longer certainly protects the work:
   * its signal aborted, it was released or handed off, or its validity (its TTL since the last
   * request the store confirmed, less drift, on this process's monotonic clock) has passed.
   * The last needs no timer to have run: a process that was paused past its TTL learns it at
   * its first look, before the watchdog or the signal could tell it. Call it before each side
   * effect that the lock protects.
   * @example
   * await locks.using('invoice:42', async (lock) => {
   *   const invoice = await this.invoices.load(42);
   *   lock.throwIfLost();
   *   await this.invoices.save(invoice.paid());
   * });
   */
  throwIfLost(): void;
  /**
   * Releases the lock at the end of an `await using` scope (as `release()`, whose answer it
   * drops). A failed release rejects, as `release()` does.
   * @example
   * await using lock = await locks.acquire('report:daily');
   * await this.reports.build(lock.signal);
   */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A held lock as plain JSON, for another process to adopt (`LockService.adopt`), once. The
 * kind of lock (semaphore permit, read or write share) travels in the token. The token proves
 * ownership until the lock is adopted: whoever has the handle can renew and release the lock,
 * so never log it.
 */
export interface LockHandle {
  /** The key as the caller named it (without the module's `keyPrefix`). */
  readonly name: string;
  /** The full key in the store: an adopter with another `keyPrefix` is refused. */
  readonly key: string;
  readonly token: string;
  readonly fencingToken: number;
  /** The TTL the lock was renewed with when it was handed off, in ms. */
  readonly ttl: number;
}

/**
 * A lock on several keys, from {@link LockService.acquire}, {@link LockService.tryAcquire} or
 * {@link LockService.using} given an array: one lock per key, taken all or none, in the order
 * of their full keys (so that callers asking for the same keys in any order cannot deadlock).
 * As a {@link Lock} it is the lock on the first key in that order (its `key`, `token` and
 * `fencingToken`); the fencing token of each key is on its own lock in {@link locks}. Its
 * `signal` aborts when any of them is lost, `release()` releases them all (`true` when every
 * one was still ours) and `extend()` extends them all (`true` when every one was).
 *
 * @example
 * ```ts
 * await locks.using(['account:1', 'account:2'], async ({ locks: [from, to] }) => {
 *   await ledger.transfer({ from: from.fencingToken, to: to.fencingToken });
 * });
 * ```
 */
export interface MultiLock extends Lock {
  /** The lock on each key, in the order of their full keys; duplicates appear once. */
  readonly locks: readonly Lock[];
}
