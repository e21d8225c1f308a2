import { LockNotAcquiredError, LockShuttingDownError } from '../lock.errors.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { kindOf, tagOf } from '../store/lock-kind.js';
import type { AcquireAttempt, LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';
import { newToken } from './token.js';
import type { Waiter, Waiters } from './waiters.js';

/** What an acquisition needs from the engine that runs it. */
export interface AcquisitionHost {
  readonly store: LockStore;
  readonly waiters: Waiters;
  /** Waiters queue in the store (fair mode). */
  readonly fair: boolean;
  /** Shutdown has begun: the caller must not start to wait. */
  readonly closing: boolean;
  /** Whether the lock with this token is held here (a late attempt must not give it back). */
  holds(token: string): boolean;
  /** Makes the caller a holder: a lock valid from `validFrom`, checked still valid. */
  hold(acquisition: Acquisition, fencingToken: number, validFrom: number): HeldLock;
  /** Runs a first attempt so that shutdown lets it finish, failing if shutdown began meanwhile. */
  attemptBeforeShutdown(acquisition: Acquisition): Promise<AcquireAttempt>;
}

/**
 * One caller's way to a lock: a first attempt, then, if the lock is held and the caller may
 * wait, a place in the waiting room until an attempt succeeds (or a release of this process
 * hands the lock over), the wait runs out, or the caller's signal abandons it.
 */
export class Acquisition implements Waiter {
  /** Tagged with the kind of lock asked for, which the store reads from it. */
  readonly token: string;
  readonly deadline: number;
  private readonly startedAt = monotonicNow();
  private settle?: { resolve: (lock: HeldLock) => void; reject: (error: unknown) => void };
  /** In the waiting room: what an attempt of its took in the store is still the caller's. */
  private waiting = false;

  constructor(
    private readonly host: AcquisitionHost,
    /** The key as the caller named it, and its full key in the store. */
    readonly name: string,
    readonly key: string,
    readonly options: ResolvedAcquireOptions,
  ) {
    this.deadline = this.startedAt + options.waitTimeout;
    this.token = newToken(tagOf(kindOf(options)));
  }

  /**
   * The lock, or `undefined` when it is held and the caller does not wait (`tryAcquire`).
   * @throws LockNotAcquiredError when the caller waited (or may not wait, and `throwIfHeld`)
   */
  run(throwIfHeld: true): Promise<HeldLock>;
  run(throwIfHeld: false): Promise<HeldLock | undefined>;
  async run(throwIfHeld: boolean): Promise<HeldLock | undefined> {
    const { signal, waitTimeout } = this.options;
    signal?.throwIfAborted();
    // Behind callers of this process that already wait for the key, a new caller queues up
    // instead of trying first: otherwise a holder that releases and asks again wins every time.
    const heard = this.host.waiters.heard(this.key);
    const sentAt = monotonicNow();
    const first: AcquireAttempt =
      waitTimeout > 0 && this.host.waiters.has(this.key)
        ? { acquired: false, pttl: -1 }
        : await this.host.attemptBeforeShutdown(this);
    if (signal?.aborted) {
      // Abandoned during the attempt: give back whatever it took (the lock, a queue place).
      await this.host.store.release(this.key, this.token).catch(() => undefined);
      throw signal.reason;
    }
    if (first.acquired) return this.host.hold(this, first.fencingToken, sentAt);
    if (waitTimeout === 0) {
      if (!throwIfHeld) return undefined;
      throw this.notAcquired(first.pttl, 0);
    }
    if (this.host.closing) {
      this.leave();
      throw new LockShuttingDownError(this.name);
    }
    return new Promise<HeldLock>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.waiting = true;
      signal?.addEventListener('abort', this.abandon, { once: true });
      this.host.waiters.wait(this.key, this, first.pttl, heard);
    });
  }

  /** One atomic attempt; in fair mode a refused one takes or keeps the caller's place in line. */
  attempt(): Promise<AcquireAttempt> {
    const queue = this.host.fair && this.options.waitTimeout > 0;
    // An attempt that timed out and is applied later took what the caller's next attempt will
    // find its own: it is given back only if the caller neither holds the lock nor waits on.
    return this.host.store.acquire(
      this.key,
      this.token,
      this.options.ttl,
      queue,
      () => this.waiting || this.host.holds(this.token),
    );
  }

  acquired(fencingToken: number, validFrom: number): void {
    this.waiting = false;
    this.stopListening();
    try {
      this.settle?.resolve(this.host.hold(this, fencingToken, validFrom));
    } catch (error) {
      this.settle?.reject(error);
    }
  }

  failed(error: unknown): void {
    this.waiting = false;
    this.stopListening();
    this.leave();
    this.settle?.reject(error);
  }

  timedOut(pttl: number): void {
    this.waiting = false;
    this.stopListening();
    this.leave();
    this.settle?.reject(this.notAcquired(pttl));
  }

  abandoned(): void {
    this.leave();
  }

  private readonly abandon = () =>
    this.host.waiters.cancel(this.key, this, () => {
      this.waiting = false;
      this.leave();
      this.settle?.reject(this.options.signal?.reason);
    });

  private stopListening(): void {
    this.options.signal?.removeEventListener('abort', this.abandon);
  }

  /**
   * Leaves the store's queue, where the first attempt may have put the caller; a lock reserved
   * for it meanwhile goes on to the next in line.
   */
  private leave(): void {
    this.host.store.release(this.key, this.token).catch(() => undefined);
  }

  /**
   * The lock was held all the time the caller waited. With `holdFor`, the holder is a throttle
   * whose window ends within `holdFor` (its TTL says so once the call that opened it returned;
   * while that call runs, its watchdog keeps the TTL at the lock's ttl).
   */
  private notAcquired(
    pttl: number,
    waitedMs = monotonicNow() - this.startedAt,
  ): LockNotAcquiredError {
    const holderTtlMs = pttl >= 0 ? pttl : undefined;
    const { holdFor } = this.options;
    if (holdFor === undefined) return new LockNotAcquiredError(this.name, waitedMs, holderTtlMs);
    const retryAfterMs = holderTtlMs === undefined ? undefined : Math.min(holderTtlMs, holdFor);
    return new LockNotAcquiredError(this.name, waitedMs, holderTtlMs, true, retryAfterMs);
  }
}
