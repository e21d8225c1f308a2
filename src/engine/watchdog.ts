import { LockConnectionError } from '../lock.errors.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';

/**
 * Why a lock ended: `gone` (Redis no longer has our token), `timeout` (renewals did not get
 * through in time, so Redis may still hold it for us), `expired` (a lock without the watchdog
 * reached the end of its TTL, as it was meant to).
 */
export type LossKind = 'gone' | 'timeout' | 'expired';

/** Longest pause before retrying a renewal that failed to reach Redis. */
const MAX_RETRY_DELAY = 1_000;

/**
 * Keeps held locks alive and notices when they are lost.
 *
 * One timer serves every lock with the watchdog on: each tick sends, in one round trip, the
 * renewal of every lock due within the next sixth of its TTL, so locks taken at different
 * moments share ticks instead of each owning a timer. A lock is lost when Redis answers that
 * its token is gone, or when no renewal has been confirmed before its validity (measured on
 * the monotonic clock from when the last confirmed request was sent) runs out. Locks without
 * the watchdog only get a timer for the end of their validity.
 */
export class Watchdog {
  private readonly locks = new Set<HeldLock>();
  private readonly expiries = new Map<HeldLock, NodeJS.Timeout>();
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;

  constructor(
    private readonly store: LockStore,
    private readonly onLost: (lock: HeldLock, reason: string, kind: LossKind) => void,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  /** Locks currently held by this process. */
  get held(): readonly HeldLock[] {
    return [...this.locks];
  }

  /** Whether a lock with this token is held and watched here. */
  holds(token: string): boolean {
    for (const lock of this.locks) if (lock.token === token) return true;
    return false;
  }

  track(lock: HeldLock): void {
    this.locks.add(lock);
    this.schedule(lock);
  }

  untrack(lock: HeldLock): void {
    this.locks.delete(lock);
    clearTimeout(this.expiries.get(lock));
    this.expiries.delete(lock);
    // The tick timer stays: it is unref'd, and a tick with nothing due just ends. Stopping and
    // starting it for every short-lived lock would cost more than the tick.
  }

  /** Compare-and-pexpire one lock now (the user's `extend`). */
  async extend(lock: HeldLock, ttl: number): Promise<boolean> {
    const sentAt = monotonicNow();
    lock.ttl = ttl;
    const [renewed] = await this.store.renew([
      { key: lock.key, token: lock.token, ttl, fencingToken: lock.fencingToken },
    ]);
    if (!this.locks.has(lock)) return false;
    if (renewed === undefined) throw new LockConnectionError(lock.name, 'extend was not decided');
    if (!renewed) {
      this.lose(lock, 'its token was gone from Redis when extending', 'gone');
      return false;
    }
    lock.confirmed(sentAt, ttl);
    this.schedule(lock);
    return true;
  }

  /** Stops all timers and forgets every lock; returns the locks that were still held. */
  stop(): HeldLock[] {
    const held = this.held as HeldLock[];
    for (const lock of held) this.untrack(lock);
    this.stopTimer();
    return held;
  }

  private schedule(lock: HeldLock): void {
    if (lock.watchdog) {
      this.wakeAt(lock.renewAt);
      return;
    }
    clearTimeout(this.expiries.get(lock));
    const timer = setTimeout(
      () => this.lose(lock, `its TTL of ${lock.ttl} ms ran out without renewal`, 'expired'),
      Math.max(0, lock.validUntil - monotonicNow()),
    );
    timer.unref();
    this.expiries.set(lock, timer);
  }

  private wakeAt(at: number): void {
    if (at >= this.timerAt) return;
    this.stopTimer();
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - monotonicNow()));
    this.timer.unref();
  }

  private stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = monotonicNow();
    const due: HeldLock[] = [];
    let next = Infinity;
    for (const lock of this.locks) {
      if (!lock.watchdog) continue;
      if (lock.validUntil <= now) {
        this.lose(lock, 'renewals did not reach Redis before its validity ran out', 'timeout');
      } else if (lock.renewing) {
        next = Math.min(next, lock.validUntil);
      } else if (lock.renewAt - lock.ttl / 6 <= now) {
        due.push(lock);
        next = Math.min(next, lock.validUntil);
      } else {
        next = Math.min(next, lock.renewAt);
      }
    }
    if (due.length > 0) this.renew(due, now);
    if (next < Infinity) this.wakeAt(next);
  }

  private renew(locks: HeldLock[], sentAt: number): void {
    for (const lock of locks) lock.renewing = true;
    const entries = locks.map(({ key, token, ttl, fencingToken }) => ({
      key,
      token,
      ttl,
      fencingToken,
    }));
    this.store.renew(entries).then(
      (renewed) => {
        const undecided: HeldLock[] = [];
        locks.forEach((lock, i) => {
          lock.renewing = false;
          if (!this.locks.has(lock)) return;
          if (renewed[i] === undefined) {
            undecided.push(lock);
          } else if (renewed[i]) {
            lock.confirmed(sentAt, entries[i].ttl);
            this.wakeAt(lock.renewAt);
          } else {
            this.lose(lock, 'its token was gone or replaced in Redis', 'gone');
          }
        });
        if (undecided.length > 0) {
          this.onRenewalError(new Error(`${undecided.length} renewals were not decided`));
          this.retrySoon(undecided);
        }
      },
      (error: unknown) => {
        this.onRenewalError(error);
        for (const lock of locks) lock.renewing = false;
        this.retrySoon(locks.filter((lock) => this.locks.has(lock)));
      },
    );
  }

  /** Tries again shortly, until the locks' validity runs out. */
  private retrySoon(locks: readonly HeldLock[]): void {
    const retryAt = monotonicNow();
    for (const lock of locks) {
      lock.renewAt = retryAt + Math.min(lock.ttl / 10, MAX_RETRY_DELAY);
      this.wakeAt(Math.min(lock.renewAt, lock.validUntil));
    }
  }

  private lose(lock: HeldLock, reason: string, kind: LossKind): void {
    this.untrack(lock);
    this.onLost(lock, reason, kind);
  }
}
