import { LockConnectionError } from '../lock.errors.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import { DueQueue } from './due-queue.js';
import { goneReason, type HeldLock } from './held-lock.js';
import { MAX_RETRY_DELAY, SLICE } from './renewal-pacing.js';
import { ValidityGuards } from './validity-guards.js';

/**
 * Why a lock ended: `gone` (the store no longer has our token), `timeout` (renewals did not
 * get through in time, so the store may still hold it for us), `expired` (a lock without the
 * watchdog reached the end of its TTL, as it was meant to).
 */
export type LossKind = 'gone' | 'timeout' | 'expired';

/**
 * Keeps held locks alive and notices when they are lost.
 *
 * One timer serves every lock with the watchdog on: each tick renews every lock due within the
 * next sixth of its TTL, so locks taken at different moments share requests instead of each
 * owning a timer. The locks wait in a queue ordered by when they are due, so a tick touches
 * only those, {@link SLICE} per request and turn of the event loop. A lock is
 * lost when the store answers that its token is gone, or when no renewal has been confirmed
 * before its validity (measured on the monotonic clock from when the last confirmed request was
 * sent) runs out. Locks without the watchdog only get a timer for the end of their validity.
 */
export class Watchdog {
  /** The locks held, by token. */
  private readonly locks = new Map<string, HeldLock>();
  /** Watched locks by when they are due; an entry counts while its time is the lock's `dueAt`. */
  private readonly due = new DueQueue<HeldLock>();
  private readonly expiries = new Map<HeldLock, NodeJS.Timeout>();
  private readonly guards = new ValidityGuards(
    (lock) => this.tracked(lock),
    (lock) =>
      this.lose(lock, 'renewals did not reach the store before its validity ran out', 'timeout'),
  );
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  /** The rest of a tick that had more locks due than a slice, once a renewal's reply came. */
  private continuation?: NodeJS.Immediate;
  /** Who waits for the last lock to go (see {@link whenEmpty}). */
  private emptied: (() => void)[] = [];

  constructor(
    private readonly store: LockStore,
    private readonly onLost: (lock: HeldLock, reason: string, kind: LossKind) => void,
    private readonly onRenewalError: (error: unknown) => void,
  ) {}

  /** Locks currently held by this process. */
  get held(): readonly HeldLock[] {
    return [...this.locks.values()];
  }

  /** How many locks this process holds. */
  get size(): number {
    return this.locks.size;
  }

  /** Whether a lock with this token is held and watched here. */
  holds(token: string): boolean {
    return this.locks.has(token);
  }

  track(lock: HeldLock): void {
    this.locks.set(lock.token, lock);
    this.schedule(lock);
  }

  untrack(lock: HeldLock): void {
    if (this.locks.get(lock.token) === lock) this.locks.delete(lock.token);
    lock.dueAt = NaN;
    clearTimeout(this.expiries.get(lock));
    this.expiries.delete(lock);
    this.guards.end(lock);
    if (this.locks.size === 0 && this.emptied.length > 0) {
      for (const resolve of this.emptied.splice(0)) resolve();
    }
    // Its entry in the queue stays until its time comes or the stale ones are many: dropping
    // it now would mean a search. The tick timer stays too (unref'd; a tick with nothing due
    // just ends): stopping and starting it for every short-lived lock would cost more.
    if (this.due.size > 2 * this.locks.size + 1_024) {
      this.due.filter((item, at) => this.current(item, at));
    }
  }

  /** Resolves once this process holds no lock (at once if it holds none now). */
  whenEmpty(): Promise<void> {
    if (this.locks.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  /**
   * Compare-and-pexpire one lock now (the user's `extend`). Until its answer, and for good if
   * none comes, the lock counts as valid only until the sooner of its old end and the new one,
   * for the store may already have applied a shorter TTL (see `HeldLock.asking`).
   */
  async extend(lock: HeldLock, ttl: number): Promise<boolean> {
    const sentAt = monotonicNow();
    if (lock.asking(sentAt, ttl)) this.revalidated(lock);
    let renewed: boolean | undefined;
    try {
      [renewed] = await this.store.renew([
        { key: lock.key, token: lock.token, ttl, fencingToken: lock.fencingToken },
      ]);
    } catch (error) {
      this.undecided(lock, sentAt, ttl);
      throw error;
    }
    if (!this.tracked(lock)) return false;
    if (renewed === undefined) {
      this.undecided(lock, sentAt, ttl);
      throw new LockConnectionError(lock.name, 'extend was not decided');
    }
    if (!renewed) {
      this.lose(lock, 'its token was gone from the store when extending', 'gone');
      return false;
    }
    lock.confirmed(sentAt, ttl);
    this.revalidated(lock);
    return true;
  }

  /** An extend that may or may not have been applied. */
  private undecided(lock: HeldLock, sentAt: number, ttl: number): void {
    if (!this.tracked(lock)) return;
    lock.mayHaveApplied(sentAt, ttl);
    if (lock.renewing) this.revalidated(lock);
    else this.retrySoon([lock]);
  }

  /**
   * The lock's validity changed outside a renewal batch: it is watched again from its new end.
   * Should a batch's renewal of it be unanswered, that batch's guard counts on the validity it
   * had when the batch was sent, which may now be later: the lock gets a guard of its own.
   */
  private revalidated(lock: HeldLock): void {
    if (!lock.renewing) {
      this.schedule(lock);
      return;
    }
    this.guards.again(lock);
  }

  /** Stops all timers and forgets every lock; returns the locks that were still held. */
  stop(): HeldLock[] {
    const held = this.held as HeldLock[];
    for (const lock of held) this.untrack(lock);
    this.due.filter(() => false);
    this.stopTimer();
    return held;
  }

  private tracked(lock: HeldLock): boolean {
    return this.locks.get(lock.token) === lock;
  }

  /** Whether the queue's entry of `lock` at `at` still counts. */
  private current(lock: HeldLock, at: number): boolean {
    return lock.dueAt === at && this.tracked(lock);
  }

  private schedule(lock: HeldLock, at = lock.renewAt): void {
    if (lock.watchdog) {
      lock.dueAt = at;
      this.due.push(at, lock);
      this.wakeAt(at);
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
    clearImmediate(this.continuation);
    this.timer = this.continuation = undefined;
    this.timerAt = Infinity;
  }

  /**
   * The next slice goes when a renewal's reply comes (see {@link nudge}), so that requests do
   * not pile up faster than the store answers them (their replies would then come in bursts
   * that hold the event loop), or after 1 ms at the latest, whatever the store does.
   */
  private continueTick(): void {
    this.stopTimer();
    this.timerAt = -Infinity;
    this.timer = setTimeout(() => this.tick(), 1);
    this.timer.unref();
  }

  /** A reply came: a slice waiting to follow goes after the event loop's I/O. */
  private nudge(): void {
    // Ref'd: with an unref'd immediate, the event loop could sleep in its poll before it.
    if (this.timerAt === -Infinity) this.continuation ??= setImmediate(() => this.tick());
  }

  /**
   * Takes the locks due within a sixth of their TTL, earliest first (up to {@link SLICE}, lost
   * ones included; the rest in the next turn of the event loop), and renews them in one batch.
   */
  private tick(): void {
    this.stopTimer();
    const now = monotonicNow();
    const due: HeldLock[] = [];
    let taken = 0; // lost locks count too: each aborts a signal and sends a release
    while (taken < SLICE) {
      const at = this.due.nextAt;
      const lock = this.due.peek();
      if (lock === undefined) break;
      if (this.current(lock, at) && at - lock.ttl / 6 > now) break;
      this.due.pop();
      if (!this.current(lock, at) || lock.renewing) continue;
      lock.dueAt = NaN;
      taken++;
      if (lock.validUntil <= now) {
        this.lose(lock, 'renewals did not reach the store before its validity ran out', 'timeout');
      } else {
        due.push(lock);
      }
    }
    if (due.length > 0) this.renew(due, now);
    if (taken === SLICE) this.continueTick();
    else this.wakeAt(this.due.nextAt);
  }

  private renew(locks: HeldLock[], sentAt: number): void {
    for (const lock of locks) lock.renewing = true;
    const entries = locks.map(({ key, token, ttl, fencingToken }) => {
      return { key, token, ttl, fencingToken };
    });
    const cancelGuard = this.guards.batch(locks);
    // A store of the app's own that throws at once rejects, as one that fails later.
    new Promise<(boolean | undefined)[]>((resolve) => resolve(this.store.renew(entries))).then(
      (renewed) => {
        cancelGuard();
        this.nudge();
        const undecided: HeldLock[] = [];
        locks.forEach((lock, i) => {
          lock.renewing = false;
          this.guards.end(lock);
          if (!this.tracked(lock)) return;
          if (renewed[i] === undefined) {
            undecided.push(lock);
          } else if (renewed[i]) {
            lock.confirmed(sentAt, entries[i].ttl);
            this.schedule(lock);
          } else {
            this.lose(lock, goneReason(lock), 'gone');
          }
        });
        if (undecided.length > 0) {
          this.onRenewalError(new Error(`${undecided.length} renewals were not decided`));
          this.retrySoon(undecided);
        }
      },
      (error: unknown) => {
        cancelGuard();
        this.nudge();
        this.onRenewalError(error);
        for (const lock of locks) {
          lock.renewing = false;
          this.guards.end(lock);
        }
        this.retrySoon(locks.filter((lock) => this.tracked(lock)));
      },
    );
  }

  /** Tries again shortly, until the locks' validity runs out. */
  private retrySoon(locks: readonly HeldLock[]): void {
    const retryAt = monotonicNow();
    for (const lock of locks) {
      lock.renewAt = retryAt + Math.min(lock.ttl / 10, MAX_RETRY_DELAY);
      this.schedule(lock, Math.min(lock.renewAt, lock.validUntil));
    }
  }

  private lose(lock: HeldLock, reason: string, kind: LossKind): void {
    this.untrack(lock);
    this.onLost(lock, reason, kind);
  }
}
