import { AsyncLocalStorage } from 'node:async_hooks';
import { newToken } from './lock.token.js';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { LOCK_OPTIONS, LOCK_STORE, MIN_TTL } from './lock.constants.js';
import {
  LockConnectionError,
  LockError,
  LockLostError,
  LockNotAcquiredError,
  LockOptionsError,
  messageOf,
  StaleFencingTokenError,
} from './lock.errors.js';
import { sideKeyOf, toDataKey, toRedisKey } from './lock.keys.js';
import { driftOf, HeldLock, monotonicNow, type Lock, type LockOwner } from './lock.js';
import type {
  AcquireOptions,
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from './options/lock-options.interface.js';
import { checkTtl } from './options/option-checks.js';
import { resolveAcquireOptions } from './options/resolve-acquire-options.js';
import type { AcquireAttempt, LockStore } from './store/lock-store.interface.js';
import { Tenure } from './tenure.js';
import { Waiters, type Waiter } from './waiters.js';
import { Watchdog, type LossKind } from './watchdog.js';

/** How long shutdown waits for the release of the locks still held. */
const SHUTDOWN_RELEASE_TIMEOUT = 2_000;

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
export class LockService implements LockOwner, OnApplicationShutdown {
  private readonly logger = new Logger(LockService.name);
  private readonly defaults: ResolvedAcquireOptions;
  private readonly watchdog: Watchdog;
  private readonly waiters: Waiters;
  private readonly context = new AsyncLocalStorage<{
    current: Lock;
    locks: Map<string, Tenure>;
  }>();
  private closed = false;
  /** First acquisition attempts on their way, which shutdown lets finish before it cleans up. */
  private readonly attempts = new Set<Promise<unknown>>();

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) private readonly store: LockStore,
  ) {
    this.defaults = {
      ttl: options.ttl,
      waitTimeout: options.waitTimeout,
      watchdog: options.watchdog,
    };
    this.watchdog = new Watchdog(
      store,
      (lock, reason, kind) => this.onLost(lock, reason, kind),
      (error) => this.logger.warn(`Lock renewal failed, will retry: ${messageOf(error)}`),
    );
    this.waiters = new Waiters(store, options.fair);
  }

  /**
   * Acquires the lock on `key`, waiting up to `waitTimeout` ms while someone else holds it.
   * @throws LockNotAcquiredError when the wait runs out
   * @throws LockKeyResolutionError for an invalid key, LockOptionsError for invalid options,
   *   LockConnectionError when Redis cannot be reached
   */
  async acquire(key: string, options?: AcquireOptions): Promise<Lock> {
    const resolved = resolveAcquireOptions(options, this.defaults);
    return this.obtain(key, resolved, true) as Promise<Lock>;
  }

  /** Acquires the lock on `key` if it is free right now; `null` when someone else holds it. */
  async tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null> {
    const resolved = resolveAcquireOptions(options, this.defaults);
    return (await this.obtain(key, { ...resolved, waitTimeout: 0 }, false)) ?? null;
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
    const resolved = resolveAcquireOptions(options, this.defaults);
    return this.runLocked([key], resolved, () => fn(this.current() as Lock));
  }

  /**
   * The fencing guard, for a resource kept in the lock store's Redis: writes `value` to the
   * Redis key `resource` (not prefixed) only if `fencingToken` is at least the highest token
   * any write to `resource` has presented, and records it. A holder whose lock expired while it
   * was paused and was taken over is refused, however late its write arrives. The resource may
   * begin neither with `{` (the library's own keys) nor with the lock prefix.
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
    const key = toDataKey(this.options.keyPrefix, resource);
    if (typeof value !== 'string') throw new LockOptionsError('value', value, 'a string');
    if (!Number.isSafeInteger(fencingToken) || fencingToken <= 0) {
      throw new LockOptionsError('fencingToken', fencingToken, 'a fencing token from a Lock');
    }
    const ttl = options.ttl === undefined ? 0 : checkTtl('ttl', options.ttl);
    const result = await this.store.writeFenced(
      key,
      sideKeyOf(key, 'fenced'),
      value,
      fencingToken,
      ttl,
    );
    if (!result.written) {
      throw new StaleFencingTokenError(resource, fencingToken, result.highestSeen);
    }
  }

  /** Whether anybody (this process or another) holds the lock on `key`. */
  async isLocked(key: string): Promise<boolean> {
    return this.store.isLocked(toRedisKey(this.options.keyPrefix, key));
  }

  /**
   * Inside {@link using} or a `@WithLock` method: the lock the work runs under (for a lock on
   * several keys, the lock on the first key in sorted order).
   */
  current(): Lock | undefined {
    return this.context.getStore()?.current;
  }

  /**
   * @internal Runs `work` holding the locks on `names`: deduplicated and taken in sorted order
   * (so that two calls on the same keys cannot deadlock), reusing those that the surrounding
   * work in the same async call chain holds. A lock taken here ends once `work` and every call
   * that reused it (detached ones included) have settled: then it is released, or, with
   * `holdFor`, left to expire `holdFor` ms after it was taken. Rejects with the `LockLostError`
   * of a lock lost before then, unless `work` threw.
   */
  async runLocked<T>(
    names: readonly string[],
    options: ResolvedAcquireOptions,
    work: () => Promise<T> | T,
    /** Answers for the call when a lock is held by someone else (instead of throwing). */
    onHeld?: (error: LockNotAcquiredError) => T,
  ): Promise<T> {
    const keys = [
      ...new Map(names.map((name) => [toRedisKey(this.options.keyPrefix, name), name])),
    ].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const outer = this.context.getStore()?.locks;
    const deadline = monotonicNow() + options.waitTimeout;
    const taken: Tenure[] = [];
    const reused: Tenure[] = [];
    const all: Tenure[] = [];
    const leaveReused = () => reused.forEach((tenure) => tenure.leave());
    try {
      for (const [key, name] of keys) {
        const shared = outer?.get(key);
        if (shared?.join()) {
          reused.push(shared);
          all.push(shared);
          continue;
        }
        const waitTimeout = Math.max(0, deadline - monotonicNow());
        const lock = (await this.obtain(name, { ...options, waitTimeout }, true)) as HeldLock;
        const tenure = new Tenure(lock);
        taken.push(tenure);
        all.push(tenure);
      }
    } catch (error) {
      leaveReused();
      await Promise.all(taken.map(({ lock }) => this.releaseAfterWork(lock)));
      if (onHeld && error instanceof LockNotAcquiredError) return onHeld(error);
      throw error;
    }
    const frame = {
      current: all[0].lock,
      locks: new Map([...(outer ?? []), ...all.map((t) => [t.lock.key, t] as const)]),
    };
    const end = () => {
      leaveReused();
      return Promise.all(
        taken.map(async (tenure) => {
          await tenure.end();
          await this.releaseAfterWork(tenure.lock);
        }),
      );
    };
    let result: T;
    try {
      const lost = all.find(({ lock }) => !lock.held);
      if (lost) throw lost.lock.signal.reason;
      result = await this.context.run(frame, work);
    } catch (error) {
      await end();
      throw error;
    }
    await end();
    const lost = all.find(({ lock }) => lock.lost);
    if (lost) throw lost.lock.signal.reason;
    return result;
  }

  /**
   * @internal Called by {@link Lock.release}: deletes the lock, or with `holdFor` leaves it in
   * the store until `holdFor` ms after it was taken. Either way this process stops renewing it.
   */
  async releaseLock(lock: HeldLock): Promise<boolean> {
    if (!lock.markReleased()) return false;
    this.watchdog.untrack(lock);
    const keepFor =
      lock.holdFor === undefined ? 0 : Math.ceil(lock.acquiredAt + lock.holdFor - monotonicNow());
    let released: boolean;
    try {
      released = keepFor >= MIN_TTL ? await this.keep(lock, keepFor) : await this.delete(lock);
    } catch (error) {
      lock.markHeldAgain();
      this.watchdog.track(lock);
      throw error;
    }
    if (!released) lock.markLost('it had expired or been taken before it was released');
    return released;
  }

  /** @internal Called by {@link HeldLock}. */
  driftOf(ttl: number): number {
    return driftOf(ttl, this.options.driftFactor);
  }

  /** @internal Called by {@link Lock.extend}. */
  async extendLock(lock: HeldLock, ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? lock.ttl : checkTtl('ttl', ttl);
    if (!lock.held) return false;
    return this.watchdog.extend(lock, newTtl);
  }

  /**
   * Stops the watchdog, fails pending waiters, releases the locks this process still holds
   * (bounded in time) and closes subscriptions and the connections the module owns.
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const waiting = this.waiters.close(shutDownError());
    const held = this.watchdog.stop();
    // Work may still run under these locks: tell it before another process can take them.
    for (const lock of held) lock.markLost('the lock service shut down');
    const releaseAll = async () => {
      // Leave the queues first, so that no released lock is handed to a waiter of ours.
      await Promise.allSettled(waiting.map(({ key, token }) => this.store.release(key, token)));
      await Promise.allSettled(held.map((lock) => this.store.release(lock.key, lock.token)));
    };
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([releaseAll(), Promise.allSettled([...this.attempts])]),
      new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_RELEASE_TIMEOUT))),
    ]);
    clearTimeout(timer);
    await this.store.close();
  }

  private async obtain(
    name: string,
    resolved: ResolvedAcquireOptions,
    throwIfHeld: boolean,
  ): Promise<HeldLock | undefined> {
    const key = toRedisKey(this.options.keyPrefix, name);
    if (this.closed) throw shutDownError();
    const { signal } = resolved;
    signal?.throwIfAborted();
    const token = newToken();
    const startedAt = monotonicNow();
    const queue = this.options.fair && resolved.waitTimeout > 0;
    const inUse = () => this.watchdog.holds(token);
    const attempt = () => this.store.acquire(key, token, resolved.ttl, queue, inUse);
    const hold = (fencingToken: number, validFrom: number) => {
      const lock = new HeldLock(
        this,
        name,
        key,
        token,
        fencingToken,
        resolved.ttl,
        resolved.watchdog,
        validFrom,
        resolved.holdFor,
      );
      this.watchdog.track(lock);
      return this.usable(lock);
    };
    // Behind callers of this process that already wait for the key, a new caller queues up
    // instead of trying first: otherwise a holder that releases and asks again wins every time.
    const heard = this.waiters.heard(key);
    const first: AcquireAttempt =
      resolved.waitTimeout > 0 && this.waiters.has(key)
        ? { acquired: false, pttl: -1 }
        : await this.beforeShutdown(async () => {
            const result = await attempt();
            if (this.closed) {
              // Shutdown began meanwhile: undo what the attempt took (a lock, a queue place).
              await this.store.release(key, token).catch(() => undefined);
              throw shutDownError();
            }
            return result;
          });
    if (signal?.aborted) {
      // Abandoned during the attempt: give back whatever it took (the lock, a queue place).
      await this.store.release(key, token).catch(() => undefined);
      throw signal.reason;
    }
    if (first.acquired) return hold(first.fencingToken, startedAt);
    if (resolved.waitTimeout === 0) {
      if (!throwIfHeld) return undefined;
      throw notAcquired(name, 0, first.pttl, resolved.holdFor);
    }
    // Leaves the store's queue, where the first attempt may have put the caller; a lock
    // reserved for it meanwhile goes on to the next in line.
    const leave = () => void this.store.release(key, token).catch(() => undefined);
    return new Promise<HeldLock>((resolve, reject) => {
      const stopListening = () => signal?.removeEventListener('abort', abandon);
      const waiter: Waiter = {
        token,
        deadline: startedAt + resolved.waitTimeout,
        attempt,
        acquired: (fencingToken, validFrom) => {
          stopListening();
          try {
            resolve(hold(fencingToken, validFrom));
          } catch (error) {
            reject(error);
          }
        },
        failed: (error) => {
          stopListening();
          leave();
          reject(error);
        },
        timedOut: (pttl) => {
          stopListening();
          leave();
          reject(notAcquired(name, monotonicNow() - startedAt, pttl, resolved.holdFor));
        },
        abandoned: leave,
      };
      const abandon = () =>
        this.waiters.cancel(key, waiter, () => {
          leave();
          reject(signal?.reason);
        });
      signal?.addEventListener('abort', abandon, { once: true });
      this.waiters.wait(key, waiter, first.pttl, heard);
    });
  }

  /** Runs `work` so that shutdown waits for it before it releases and closes. */
  private beforeShutdown<T>(work: () => Promise<T>): Promise<T> {
    const running = work();
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.attempts.add(settled);
    void settled.then(() => this.attempts.delete(settled));
    return running;
  }

  /**
   * A lock whose validity ran out before its acquisition was answered (a stall, or a WAIT for
   * replicas, that outlasted the TTL) may already be someone else's: it is given back, and the
   * acquisition fails instead of starting work that nothing protects.
   * @throws LockConnectionError
   */
  private usable(lock: HeldLock): HeldLock {
    if (lock.validUntil > monotonicNow()) return lock;
    this.watchdog.untrack(lock);
    lock.markReleased();
    this.store.release(lock.key, lock.token).catch(() => undefined);
    throw new LockConnectionError(
      lock.name,
      `the lock was granted, but its validity (ttl ${lock.ttl} ms) ran out before the answer came`,
    );
  }

  /**
   * Deletes the lock. In fair mode it goes straight to the longest-waiting caller of this
   * process if that caller is first in the store's queue too: the release's reply, to a request
   * sent before the store gave it, dates its validity.
   */
  private async delete(lock: HeldLock): Promise<boolean> {
    const successor = this.options.fair ? this.waiters.successor(lock.key) : undefined;
    const sentAt = monotonicNow();
    const { released, successorFencingToken } = await this.store.release(
      lock.key,
      lock.token,
      successor,
    );
    if (
      successor !== undefined &&
      successorFencingToken !== undefined &&
      !this.waiters.handOver(lock.key, successor, successorFencingToken, sentAt)
    ) {
      // The successor stopped waiting meanwhile: the lock goes on to the next in line.
      this.store.release(lock.key, successor).catch(() => undefined);
    }
    return released;
  }

  /**
   * Throttle mode (`holdFor`): leaves the lock in the store for `ms` more, so that it ends
   * `holdFor` ms after it was taken; `false` if it was no longer ours.
   */
  private async keep(lock: HeldLock, ms: number): Promise<boolean> {
    const [kept] = await this.store.renew([
      { key: lock.key, token: lock.token, ttl: ms, fencingToken: lock.fencingToken },
    ]);
    if (kept === undefined) throw new LockConnectionError(lock.name, 'the hold was not decided');
    return kept;
  }

  /**
   * Releases a lock whose work has ended. Nobody will retry a release that fails here, so the
   * lock is then left to expire instead of being renewed again.
   */
  private async releaseAfterWork(lock: HeldLock): Promise<void> {
    try {
      await this.releaseLock(lock);
    } catch (error) {
      this.watchdog.untrack(lock);
      lock.markReleased();
      this.logger.warn(
        `Could not release lock "${lock.name}" (it will expire by its TTL): ${messageOf(error)}`,
      );
    }
  }

  private onLost(lock: HeldLock, reason: string, kind: LossKind): void {
    if (!lock.markLost(reason) || kind === 'expired') return;
    this.logger.warn(new LockLostError(lock.name, reason).message);
    if (kind === 'timeout') {
      // Redis may still hold it for us (only the replies were late): free it for the others.
      this.store.release(lock.key, lock.token).catch(() => undefined);
    }
  }
}

/**
 * The lock was held all the time the caller waited. With `holdFor`, the holder is a throttle
 * whose window ends within `holdFor` (its TTL says so once the call that opened it returned;
 * while that call runs, its watchdog keeps the TTL at the lock's ttl).
 */
function notAcquired(
  name: string,
  waitedMs: number,
  pttl: number,
  holdFor: number | undefined,
): LockNotAcquiredError {
  const holderTtlMs = pttl >= 0 ? pttl : undefined;
  if (holdFor === undefined) return new LockNotAcquiredError(name, waitedMs, holderTtlMs);
  const retryAfterMs = holderTtlMs === undefined ? undefined : Math.min(holderTtlMs, holdFor);
  return new LockNotAcquiredError(name, waitedMs, holderTtlMs, true, retryAfterMs);
}

function shutDownError(): LockError {
  return new LockError('The lock service has been shut down');
}
