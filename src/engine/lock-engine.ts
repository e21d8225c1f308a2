import { MIN_TTL } from '../lock.constants.js';
import {
  LockConnectionError,
  LockLostError,
  LockOptionsError,
  LockShuttingDownError,
  messageOf,
  StaleFencingTokenError,
} from '../lock.errors.js';
import { sideKeyOf, toDataKey, toRedisKey } from '../keys/lock-keys.js';
import type {
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from '../options/lock-options.interface.js';
import { checkTtl } from '../options/option-checks.js';
import type { AcquireAttempt, LockStore } from '../store/lock-store.interface.js';
import { Acquisition, type AcquisitionHost } from './acquisition.js';
import { driftOf, monotonicNow } from './clock.js';
import { HeldLock, type LockOwner } from './held-lock.js';
import { LockScopes } from './lock-scopes.js';
import { Waiters } from './waiters.js';
import { Watchdog, type LossKind } from './watchdog.js';

/** How long shutdown waits for the release of the locks still held. */
const SHUTDOWN_RELEASE_TIMEOUT = 2_000;

/**
 * The lock engine: acquisition, waiting, the watchdog, release after work and shutdown, over one
 * lock store. It knows nothing of Nest; `LockService` is its face.
 */
export class LockEngine implements AcquisitionHost, LockOwner {
  readonly waiters: Waiters;
  /** Runs work under locks, reentrantly (`using`, `@WithLock`). */
  readonly scopes: LockScopes;
  private readonly watchdog: Watchdog;
  private closed = false;
  private stopped?: Promise<void>;
  private storeClosed?: Promise<void>;
  /** First acquisition attempts on their way, which shutdown lets finish before it cleans up. */
  private readonly attempts = new Set<Promise<unknown>>();

  /** @param warn where problems that no caller waits for are reported */
  constructor(
    private readonly options: ResolvedLockOptions,
    readonly store: LockStore,
    private readonly warn: (message: string) => void,
  ) {
    this.watchdog = new Watchdog(
      store,
      (lock, reason, kind) => this.onLost(lock, reason, kind),
      (error) => warn(`Lock renewal failed, will retry: ${messageOf(error)}`),
    );
    this.waiters = new Waiters(store, options.fair);
    this.scopes = new LockScopes(this, options.keyPrefix);
  }

  get fair(): boolean {
    return this.options.fair;
  }

  /** Shutdown has begun: no new holder, no new waiter. */
  get closing(): boolean {
    return this.closed;
  }

  /**
   * The lock on `name`, waiting for it as the options say.
   * @throws LockNotAcquiredError when it stays held
   */
  async acquire(name: string, options: ResolvedAcquireOptions): Promise<HeldLock> {
    return this.start(name, options).run(true);
  }

  /** The lock on `name` if it is free right now; `undefined` when it is held. */
  async tryAcquire(name: string, options: ResolvedAcquireOptions): Promise<HeldLock | undefined> {
    return this.start(name, { ...options, waitTimeout: 0 }).run(false);
  }

  holds(token: string): boolean {
    return this.watchdog.holds(token);
  }

  hold(acquisition: Acquisition, fencingToken: number, validFrom: number): HeldLock {
    const { name, key, token, options } = acquisition;
    if (this.closed) {
      // Granted while shutdown ran, after it collected the locks to release: give it back.
      this.store.release(key, token).catch(() => undefined);
      throw new LockShuttingDownError(name);
    }
    const { ttl, watchdog, holdFor } = options;
    const grant = { name, key, token, fencingToken, ttl, watchdog, validFrom, holdFor };
    const lock = new HeldLock(this, grant);
    this.watchdog.track(lock);
    return this.usable(lock);
  }

  attemptBeforeShutdown(acquisition: Acquisition): Promise<AcquireAttempt> {
    const running = acquisition.attempt().then((result) => {
      if (!this.closed) return result;
      // Shutdown began meanwhile: undo what the attempt took (a lock, a queue place).
      return this.store
        .release(acquisition.key, acquisition.token)
        .then(undefined, () => undefined)
        .then(() => Promise.reject(new LockShuttingDownError(acquisition.name)));
    });
    const forget = () => this.attempts.delete(settled);
    const settled: Promise<unknown> = running.then(forget, forget);
    this.attempts.add(settled);
    return running;
  }

  /**
   * Deletes the lock (`Lock.release`), or with `holdFor` leaves it in the store until `holdFor`
   * ms after it was taken. Either way this process stops renewing it.
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
      if (this.closed) {
        // Shutdown began during the release and did not see this lock (it was untracked): it
        // must not be renewed again while the process drains. Its TTL ends it if this last
        // try fails too.
        lock.markLost('the lock service shut down');
        this.store.release(lock.key, lock.token).catch(() => undefined);
      } else {
        lock.markHeldAgain();
        this.watchdog.track(lock);
      }
      throw error;
    }
    if (!released) lock.markLost('it had expired or been taken before it was released');
    return released;
  }

  /**
   * Releases a lock whose work has ended. Nobody will retry a release that fails here, so the
   * lock is then left to expire instead of being renewed again.
   */
  async releaseAfterWork(lock: HeldLock): Promise<void> {
    try {
      await this.releaseLock(lock);
    } catch (error) {
      this.watchdog.untrack(lock);
      lock.markReleased();
      this.warn(
        `Could not release lock "${lock.name}" (it will expire by its TTL): ${messageOf(error)}`,
      );
    }
  }

  /** `Lock.extend`. */
  async extendLock(lock: HeldLock, ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? lock.ttl : checkTtl('ttl', ttl);
    if (!lock.held) return false;
    return this.watchdog.extend(lock, newTtl);
  }

  driftOf(ttl: number): number {
    return driftOf(ttl, this.options.driftFactor);
  }

  /** Whether anybody (this process or another) holds the lock on `name`. */
  isLocked(name: string): Promise<boolean> {
    return this.store.isLocked(toRedisKey(this.options.keyPrefix, name));
  }

  /** The fencing guard: see `LockService.writeFenced`. */
  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    options: { ttl?: number },
  ): Promise<void> {
    const key = toDataKey(this.options.keyPrefix, resource);
    if (typeof value !== 'string') throw new LockOptionsError('value', value, 'a string');
    if (!Number.isSafeInteger(fencingToken) || fencingToken <= 0) {
      throw new LockOptionsError('fencingToken', fencingToken, 'a fencing token from a Lock');
    }
    const ttl = options.ttl === undefined ? 0 : checkTtl('ttl', options.ttl);
    const guard = sideKeyOf(key, 'fenced');
    const result = await this.store.writeFenced(key, guard, value, fencingToken, ttl);
    if (!result.written) {
      throw new StaleFencingTokenError(resource, fencingToken, result.highestSeen);
    }
  }

  /**
   * Stops taking locks: fails pending waiters, stops the watchdog, tells work still running
   * under this process's locks that they are lost, and releases them (bounded in time). The
   * store stays open (for {@link isLocked} and {@link writeFenced}) until {@link shutdown}.
   */
  async stop(): Promise<void> {
    this.stopped ??= this.stopTakingLocks();
    await this.stopped;
  }

  /** {@link stop}s, then closes subscriptions and the connections the store owns. */
  async shutdown(): Promise<void> {
    await this.stop();
    this.storeClosed ??= this.store.close();
    await this.storeClosed;
  }

  private async stopTakingLocks(): Promise<void> {
    this.closed = true;
    // A lock key is the prefix and the caller's name: the error names the key as the caller did.
    const prefix = this.options.keyPrefix.length;
    const waiting = this.waiters.close((key) => new LockShuttingDownError(key.slice(prefix)));
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
  }

  private start(name: string, options: ResolvedAcquireOptions): Acquisition {
    const key = toRedisKey(this.options.keyPrefix, name);
    if (this.closed) throw new LockShuttingDownError(name);
    return new Acquisition(this, name, key, options);
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
      !this.waiters.handOver(lock.key, successor, successorFencingToken, sentAt) &&
      // The successor's own attempt, sent after this release, may have answered first (replies
      // to one connection can be handled out of order): then it holds the lock, and keeps it.
      !this.holds(successor)
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

  private onLost(lock: HeldLock, reason: string, kind: LossKind): void {
    if (!lock.markLost(reason) || kind === 'expired') return;
    this.warn(new LockLostError(lock.name, reason).message);
    if (kind === 'timeout') {
      // The store may still hold it for us (only the replies were late): free it for others.
      this.store.release(lock.key, lock.token).catch(() => undefined);
    }
  }
}
