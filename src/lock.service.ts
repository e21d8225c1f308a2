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
import {
  checkTtl,
  resolveAcquireOptions,
  type AcquireOptions,
  type ResolvedAcquireOptions,
  type ResolvedLockOptions,
} from './lock.options.js';
import type { AcquireAttempt, LockStore } from './store/lock-store.interface.js';
import { Waiters } from './waiters.js';
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
    locks: Map<string, HeldLock>;
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
   * chain), `fn` runs at once under the lock held further out.
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
   * work in the same async call chain already holds. When the locks end they are released, or,
   * with `holdFor`, left to expire `holdFor` ms after they were taken. Rejects with the
   * `LockLostError` of a lock lost during `work` once `work` settles, unless `work` threw.
   */
  async runLocked<T>(
    names: readonly string[],
    options: ResolvedAcquireOptions,
    work: () => Promise<T> | T,
    hooks: {
      holdFor?: number;
      /** Answers for the call when a lock is held by someone else (instead of throwing). */
      onHeld?: (error: LockNotAcquiredError) => T;
    } = {},
  ): Promise<T> {
    const { holdFor, onHeld } = hooks;
    const keys = [
      ...new Map(names.map((name) => [toRedisKey(this.options.keyPrefix, name), name])),
    ].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const outer = this.context.getStore()?.locks;
    const deadline = monotonicNow() + options.waitTimeout;
    const taken: HeldLock[] = [];
    const all: HeldLock[] = [];
    try {
      for (const [key, name] of keys) {
        const reused = outer?.get(key);
        if (reused?.held) {
          all.push(reused);
          continue;
        }
        const waitTimeout = Math.max(0, deadline - monotonicNow());
        const lock = (await this.obtain(name, { ...options, waitTimeout }, true)) as HeldLock;
        taken.push(lock);
        all.push(lock);
      }
    } catch (error) {
      await Promise.all(taken.map((lock) => this.releaseAfterWork(lock)));
      if (onHeld && error instanceof LockNotAcquiredError) return onHeld(error);
      throw error;
    }
    const frame = {
      current: all[0],
      locks: new Map([...(outer ?? []), ...all.map((l) => [l.key, l] as const)]),
    };
    const end = () =>
      Promise.all(
        taken.map((lock) =>
          holdFor === undefined ? this.releaseAfterWork(lock) : this.leaveToExpire(lock, holdFor),
        ),
      );
    let result: T;
    try {
      const lost = all.find((lock) => !lock.held);
      if (lost) throw lost.signal.reason;
      result = await this.context.run(frame, work);
    } catch (error) {
      await end();
      throw error;
    }
    await end();
    const lost = all.find((lock) => lock.lost);
    if (lost) throw lost.signal.reason;
    return result;
  }

  /** @internal Called by {@link Lock.release}. */
  async releaseLock(lock: HeldLock): Promise<boolean> {
    if (!lock.markReleased()) return false;
    this.watchdog.untrack(lock);
    let deleted: boolean;
    try {
      deleted = await this.store.release(lock.key, lock.token);
    } catch (error) {
      lock.markHeldAgain();
      this.watchdog.track(lock);
      throw error;
    }
    if (!deleted) lock.markLost('it had expired or been taken before it was released');
    return deleted;
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
    const token = newToken();
    const startedAt = monotonicNow();
    let sentAt = startedAt;
    const queue = this.options.fair && resolved.waitTimeout > 0;
    // A lock handed over counts from the last attempt that Redis refused: that one was answered
    // before the handover, while a later one may still have been on its way.
    let refusedAt = startedAt;
    const inUse = () => this.watchdog.holds(token);
    const attempt = async () => {
      const sent = monotonicNow();
      sentAt = sent;
      const result = await this.store.acquire(key, token, resolved.ttl, queue, inUse);
      if (!result.acquired) refusedAt = sent;
      return result;
    };
    // Behind callers of this process that already wait for the key, a new caller queues up
    // instead of trying first: otherwise a holder that releases and asks again wins every time.
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
    const hold = (fencingToken: number, validFrom = sentAt) => {
      const lock = new HeldLock(
        this,
        name,
        key,
        token,
        fencingToken,
        resolved.ttl,
        resolved.watchdog,
        validFrom,
      );
      this.watchdog.track(lock);
      return lock;
    };
    if (first.acquired) return this.usable(hold(first.fencingToken));
    if (resolved.waitTimeout === 0) {
      if (!throwIfHeld) return undefined;
      throw new LockNotAcquiredError(name, 0, first.pttl >= 0 ? first.pttl : undefined);
    }
    return new Promise<HeldLock>((resolve, reject) =>
      this.waiters.wait(
        key,
        {
          token,
          deadline: startedAt + resolved.waitTimeout,
          attempt,
          acquired: (fencingToken, handedOver) => {
            if (!handedOver) {
              try {
                return resolve(this.usable(hold(fencingToken)));
              } catch (error) {
                return reject(error);
              }
            }
            const lock = hold(fencingToken, refusedAt);
            if (!this.store.confirmsHandovers) return resolve(this.freshen(lock));
            const waitAgain = () =>
              (
                this.obtain(
                  name,
                  {
                    ...resolved,
                    waitTimeout: Math.max(0, startedAt + resolved.waitTimeout - monotonicNow()),
                  },
                  true,
                ) as Promise<HeldLock>
              ).catch((error: unknown) => {
                // Report the whole wait, not just its second part.
                if (!(error instanceof LockNotAcquiredError)) throw error;
                throw new LockNotAcquiredError(
                  name,
                  monotonicNow() - startedAt,
                  error.retryAfterMs,
                  error.throttled,
                );
              });
            resolve(this.confirmHandover(lock, attempt, hold, waitAgain));
          },
          failed: (error) => {
            // Leave the store's queue, where the first attempt may have put the caller.
            this.store.release(key, token).catch(() => undefined);
            reject(error);
          },
          timedOut: (pttl) => {
            // Leave the store's queue; should the lock have been handed over meanwhile, this
            // passes it on.
            this.store.release(key, token).catch(() => undefined);
            reject(
              new LockNotAcquiredError(
                name,
                monotonicNow() - startedAt,
                pttl >= 0 ? pttl : undefined,
              ),
            );
          },
          abandoned: () => void this.store.release(key, token).catch(() => undefined),
        },
        first.pttl,
      ),
    );
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
   * A lock handed over by the store counts its validity from this caller's last request, which
   * Redis answered before the handover: safe, but possibly long ago. When less than half of the
   * TTL is left that way, one renewal restores it before the caller starts to work.
   */
  private async freshen(lock: HeldLock): Promise<HeldLock> {
    if (lock.validUntil - monotonicNow() < lock.ttl / 2) {
      await this.watchdog.extend(lock, lock.ttl).catch(() => undefined);
    }
    // Lost before the caller could start: do not hand it a lock that protects nothing.
    if (!lock.held) throw lock.signal.reason;
    return this.usable(lock);
  }

  /**
   * A store that waits for replicas has the caller confirm a handover with an acquisition
   * attempt of its own (`confirm`, which restarts the TTL and waits for the replicas): the
   * releaser's write that handed the lock over was not waited for. If the lock is gone by then
   * (a failover lost it, or it expired), nothing has run under it yet: the caller leaves the
   * queue and waits again for the rest of its time (`waitAgain`); if the attempt took the lock
   * afresh, the caller holds that lock, with its newer fencing token (`hold`).
   */
  private async confirmHandover(
    lock: HeldLock,
    confirm: () => Promise<AcquireAttempt>,
    hold: (fencingToken: number) => HeldLock,
    waitAgain: () => Promise<HeldLock>,
  ): Promise<HeldLock> {
    const sentAt = monotonicNow();
    let result: AcquireAttempt;
    try {
      result = await confirm();
    } catch (error) {
      await this.releaseAfterWork(lock);
      throw error;
    }
    // The watchdog may have given the lock up meanwhile (its validity, counted from long
    // before, ran out during the confirmation): then it is no longer the caller's.
    const heldWith = result.acquired && lock.held ? result.fencingToken : undefined;
    if (heldWith === lock.fencingToken) {
      lock.confirmed(sentAt, lock.ttl);
      return this.usable(lock);
    }
    this.watchdog.untrack(lock);
    lock.markReleased();
    if (heldWith !== undefined) return this.usable(hold(heldWith));
    await this.store.release(lock.key, lock.token).catch(() => undefined);
    return waitAgain();
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
   * Throttle mode: leaves the lock in Redis until `holdFor` ms after it was taken, or releases
   * it now if that moment has passed. Either way this process stops renewing it.
   */
  private async leaveToExpire(lock: HeldLock, holdFor: number): Promise<void> {
    const remaining = Math.ceil(lock.acquiredAt + holdFor - monotonicNow());
    if (remaining < MIN_TTL || !lock.held) {
      await this.releaseAfterWork(lock);
      return;
    }
    try {
      await this.watchdog.extend(lock, remaining);
    } catch (error) {
      this.logger.warn(`Could not set the hold time of lock "${lock.name}": ${messageOf(error)}`);
    }
    this.watchdog.untrack(lock);
    lock.markReleased();
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

function shutDownError(): LockError {
  return new LockError('The lock service has been shut down');
}
