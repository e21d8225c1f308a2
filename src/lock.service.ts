import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOCK_ENGINE, LOCK_OPTIONS } from './lock.constants.js';
import type { LockEngine } from './engine/lock-engine.js';
import { writeFenced } from './engine/fenced-write.js';
import { facetOf } from './store/capabilities.js';
import { checkHandle } from './engine/handles.js';
import { MultiHeldLock } from './engine/multi-held-lock.js';
import { lockIdOf, lockIdsOf } from './keys/lock-keys.js';
import { LockNotAcquiredError, LockOptionsError } from './lock.errors.js';
import type { Lock, LockHandle, MultiLock } from './lock.js';
import { lockInfoOf, type LockInfo } from './lock-info.js';
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
export class LockService {
  private readonly defaults: ResolvedAcquireOptions;
  private readonly keyPrefix: string;

  constructor(
    @Inject(LOCK_OPTIONS) options: ResolvedLockOptions,
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
  ) {
    this.keyPrefix = options.keyPrefix;
    this.defaults = {
      ttl: options.ttl,
      waitTimeout: options.waitTimeout,
      watchdog: options.watchdog,
    };
  }

  /**
   * Acquires the lock on `key`, waiting up to `waitTimeout` ms while someone else holds it.
   * Given several keys, acquires them all or none, within one `waitTimeout`: see
   * {@link MultiLock}.
   * @throws LockNotAcquiredError when the wait runs out (naming the key that stayed held)
   * @throws LockKeyResolutionError for an invalid key or an empty list, LockOptionsError for
   *   invalid options, LockConnectionError when the store cannot be reached
   */
  async acquire(key: string, options?: AcquireOptions): Promise<Lock>;
  async acquire(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock>;
  async acquire(keys: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const resolved = resolveAcquireOptions(options, this.defaults, this.engine.store.capabilities);
    if (!isKeyList(keys)) return this.engine.acquire(lockIdOf(this.keyPrefix, keys), resolved);
    const ids = lockIdsOf(this.keyPrefix, keys);
    return new MultiHeldLock(await this.engine.acquireAll(ids, resolved));
  }

  /**
   * Acquires the lock on `key` (or on every key given, all or none) if it is free right now;
   * `null` when someone else holds it.
   */
  async tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null>;
  async tryAcquire(keys: readonly string[], options?: AcquireOptions): Promise<MultiLock | null>;
  async tryAcquire(
    keys: string | readonly string[],
    options?: AcquireOptions,
  ): Promise<Lock | null> {
    const resolved = resolveAcquireOptions(options, this.defaults, this.engine.store.capabilities);
    if (!isKeyList(keys)) {
      const lock = await this.engine.tryAcquire(lockIdOf(this.keyPrefix, keys), resolved);
      return lock ?? null;
    }
    const ids = lockIdsOf(this.keyPrefix, keys);
    const locks = await this.engine
      .acquireAll(ids, { ...resolved, waitTimeout: 0 })
      .catch((error: unknown) => {
        if (error instanceof LockNotAcquiredError) return null;
        throw error;
      });
    return locks && new MultiHeldLock(locks);
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
   * lock has ended (or was lost) acquires the lock afresh instead. Given several keys, holds
   * them all (see {@link MultiLock}), reusing those the surrounding work holds.
   */
  async using<T>(
    key: string,
    fn: (lock: Lock) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T>;
  async using<T>(
    keys: readonly string[],
    fn: (lock: MultiLock) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T>;
  async using<T>(
    keys: string | readonly string[],
    fn: (lock: MultiLock) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T> {
    if (typeof fn !== 'function') throw new LockOptionsError('fn', fn, 'a function');
    const resolved = resolveAcquireOptions(options, this.defaults, this.engine.store.capabilities);
    const { scopes } = this.engine;
    if (!isKeyList(keys)) {
      const id = lockIdOf(this.keyPrefix, keys);
      return scopes.run([id], resolved, () => fn(scopes.current() as MultiLock));
    }
    const ids = lockIdsOf(this.keyPrefix, keys);
    return scopes.run(ids, resolved, () => fn(new MultiHeldLock(scopes.currentLocks(ids))));
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
    const request = { resource, value, fencingToken, ttl: options.ttl };
    return writeFenced(this.engine.store, this.keyPrefix, request);
  }

  /**
   * Takes over a lock that another process (or instance) handed off with `Lock.handOff()`:
   * moves the hold, in one atomic step, from the handle's token to a new token of this
   * instance (which `inspect()` then names), keeping its fencing token, and returns it,
   * renewed by this instance's watchdog until its `release()`. A handle is adopted once: the
   * handle's token holds nothing afterwards. The instance must use the same store and
   * `keyPrefix`. See docs/handles.md.
   * @param options.ttl the TTL to take it with (default: the handle's)
   * @param options.watchdog whether this instance renews it (default: the module's `watchdog`)
   * @throws LockLostError when the lock is gone (expired, released, taken) or was adopted
   *   already, here or in another instance
   * @throws LockOptionsError for a malformed handle, another key prefix, a fencing token that
   *   is not the hold's, or a store that cannot hand locks over (ZooKeeper)
   */
  async adopt(handle: LockHandle, options?: { ttl?: number; watchdog?: boolean }): Promise<Lock> {
    const id = checkHandle(handle, (name) => lockIdOf(this.keyPrefix, name));
    const resolved = resolveAcquireOptions(
      { ...options, ttl: options?.ttl ?? handle.ttl, waitTimeout: 0 },
      this.defaults,
      this.engine.store.capabilities,
    );
    return this.engine.adopt(id, handle, resolved);
  }

  /** Whether anybody (this process or another) holds the lock on `key`. */
  async isLocked(key: string): Promise<boolean> {
    const { key: stored } = lockIdOf(this.keyPrefix, key);
    return facetOf(this.engine.store, 'isLocked')(stored);
  }

  /**
   * Who holds `key` (each holder's `instanceId`, the time its hold has left and its fencing
   * token) and how many callers wait for it, as the store sees it at one moment, whichever
   * process holds or waits. On RedLock, what a majority of masters agree on.
   *
   * @example
   * ```ts
   * const { state, holders, waiting } = await locks.inspect('report:daily');
   * ```
   * @throws LockKeyResolutionError for an invalid key, LockConnectionError when the store cannot
   *   be reached
   */
  async inspect(key: string): Promise<LockInfo> {
    const id = lockIdOf(this.keyPrefix, key);
    return lockInfoOf(id.key, await facetOf(this.engine.store, 'inspect')(id.key));
  }

  /**
   * The tool of last resort, for a key whose holder is stuck: frees `key` whoever holds it (in
   * any process), as their releases would, so that the next waiter in line gets it. Each evicted
   * holder learns it at its next renewal (its `signal` aborts with `LockLostError`, and `using`
   * / `@WithLock` reject with it), its `release()` resolves `false`, and the next holder's
   * greater fencing token refuses its fenced writes. Work the evicted holder is still doing is
   * not stopped: it runs unprotected until it checks its signal, so prefer waiting for the TTL
   * when the holder may be alive.
   *
   * @returns how many holders were evicted (0 when the key was free)
   * @throws LockKeyResolutionError for an invalid key, LockConnectionError when the store cannot
   *   be reached
   */
  async forceRelease(key: string): Promise<number> {
    const id = lockIdOf(this.keyPrefix, key);
    const evicted = await facetOf(this.engine.store, 'forceRelease')(id.key);
    if (evicted > 0) {
      new Logger(LockService.name).warn(
        `Lock "${id.name}" was force-released: ${evicted} holder(s) evicted`,
      );
    }
    return evicted;
  }

  /**
   * Inside {@link using} or a `@WithLock` method: the lock the work runs under (for a lock on
   * several keys, the lock on the first key in sorted order).
   */
  current(): Lock | undefined {
    return this.engine.scopes.current();
  }
}

/** Whether a caller named several keys. */
function isKeyList(keys: unknown): keys is readonly string[] {
  return Array.isArray(keys);
}
