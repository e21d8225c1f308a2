import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { LOCK_ENGINE, LOCK_OPTIONS } from './lock.constants.js';
import type { LockEngine } from './engine/lock-engine.js';
import { LockOptionsError } from './lock.errors.js';
import type { Lock } from './lock.js';
import type {
  AcquireOptions,
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from './options/lock-options.interface.js';
import { resolveAcquireOptions } from './options/resolve-acquire-options.js';

/**
 * The manual API: acquire, try, run under a lock, and inspect.
 *
 * @example
 * ```ts
 * @Injectable()
 * class Payments {
 *   constructor(private readonly locks: LockService) {}
 *
 *   refund(orderId: string) {
 *     return this.locks.using(`order:${orderId}`, async (lock) => {
 *       await this.ledger.write(orderId, { fence: lock.fencingToken, signal: lock.signal });
 *     });
 *   }
 * }
 * ```
 */
@Injectable()
export class LockService implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly defaults: ResolvedAcquireOptions;
  private readonly store: ResolvedLockOptions['store'];

  constructor(
    @Inject(LOCK_OPTIONS) options: ResolvedLockOptions,
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
  ) {
    this.store = options.store;
    this.defaults = {
      ttl: options.ttl,
      waitTimeout: options.waitTimeout,
      watchdog: options.watchdog,
    };
  }

  /**
   * Acquires the lock on `key`, waiting up to `waitTimeout` ms while someone else holds it.
   * @throws LockNotAcquiredError when the wait runs out
   * @throws LockKeyResolutionError for an invalid key, LockOptionsError for invalid options,
   *   LockConnectionError when Redis cannot be reached
   */
  async acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    return this.engine.acquire(key, resolveAcquireOptions(options, this.defaults, this.store));
  }

  /** Acquires the lock on `key` if it is free right now; `null` when someone else holds it. */
  async tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null> {
    const lock = await this.engine.tryAcquire(
      key,
      resolveAcquireOptions(options, this.defaults, this.store),
    );
    return lock ?? null;
  }

  /**
   * Acquires the lock on `key` (waiting as {@link acquire} does), runs `fn` while the watchdog
   * keeps the lock alive, and releases it when `fn` settles. If the lock was lost while `fn`
   * ran, rejects with {@link LockLostError} after `fn` settles (unless `fn` itself threw), so
   * that the caller learns that the work was not protected. Inside `fn`, {@link current}
   * returns the lock. Reentrant: inside work that already holds `key` (in the same async call
   * chain), `fn` runs at once under the lock held further out. That lock stays held until such
   * a nested call settles too, even a detached one (started from a timer or a promise nobody
   * awaits), so the outer call settles only after it; a nested call that starts once the outer
   * lock has ended (or was lost) acquires the lock afresh instead.
   */
  async using<T>(
    key: string,
    fn: (lock: Lock) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T> {
    if (typeof fn !== 'function') throw new LockOptionsError('fn', fn, 'a function');
    const resolved = resolveAcquireOptions(options, this.defaults, this.store);
    const { scopes } = this.engine;
    return scopes.run([key], resolved, () => fn(scopes.current() as Lock));
  }

  /**
   * The fencing guard, for a resource kept in the lock store's Redis: writes `value` to the
   * Redis key `resource` (not prefixed) only if `fencingToken` is at least the highest token
   * any write to `resource` has presented, and records it. A holder whose lock expired while it
   * was paused and was taken over is refused, however late its write arrives. The resource may
   * begin neither with `{` (the library's own keys) nor with the lock prefix. On ZooKeeper the
   * resource is a node under the root holding `{ fencingToken, value }` as JSON (see
   * docs/zookeeper.md), and `ttl` is refused.
   *
   * @example
   * ```ts
   * await locks.using(`order:${id}`, (lock) =>
   *   locks.writeFenced(`order:${id}:state`, JSON.stringify(state), lock.fencingToken),
   * );
   * ```
   * @param options.ttl expiry of the value in ms (default: none)
   * @throws StaleFencingTokenError when a newer holder has already written
   * @throws LockKeyResolutionError for a resource outside the data namespace
   */
  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    options: { ttl?: number } = {},
  ): Promise<void> {
    return this.engine.writeFenced(resource, value, fencingToken, options);
  }

  /** Whether anybody (this process or another) holds the lock on `key`. */
  async isLocked(key: string): Promise<boolean> {
    return this.engine.isLocked(key);
  }

  /**
   * Inside {@link using} or a `@WithLock` method: the lock the work runs under (for a lock on
   * several keys, the lock on the first key in sorted order).
   */
  current(): Lock | undefined {
    return this.engine.scopes.current();
  }

  /**
   * Shutdown begins: stops taking locks (pending waiters and new calls fail with `LockError`),
   * tells work still running under this process's locks that they are lost, and releases them
   * (bounded in time). Nest runs this before an HTTP server drains its connections, which
   * keep-alive clients can make last long: other instances need not wait for that.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.engine.stop();
  }

  /** Closes the connections the module owns (after {@link beforeApplicationShutdown}'s work). */
  async onApplicationShutdown(): Promise<void> {
    await this.engine.shutdown();
  }
}
