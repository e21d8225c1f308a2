import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';

/**
 * While a renewal is unanswered its locks are out of the watchdog's queue: timers here tell
 * each of them that its validity ran out, should no answer come by then. A batch has one timer
 * for all its locks; a lock whose validity changed meanwhile (an extend) gets one of its own.
 */
export class ValidityGuards {
  private readonly single = new Map<HeldLock, () => void>();

  /**
   * @param watched whether the lock is still held and watched here
   * @param expired called for a lock whose renewal is still unanswered when its validity ends
   */
  constructor(
    private readonly watched: (lock: HeldLock) => boolean,
    private readonly expired: (lock: HeldLock) => void,
  ) {}

  /** Guards the locks of a batch whose renewal was just sent; returns the guard's cancel. */
  batch(locks: readonly HeldLock[]): () => void {
    let timer: NodeJS.Timeout | undefined;
    const arm = (waiting: readonly HeldLock[]) => {
      let first = Infinity;
      for (const lock of waiting) first = Math.min(first, lock.validUntil);
      timer = setTimeout(() => expire(waiting), Math.max(0, first - monotonicNow()));
      timer.unref();
    };
    const expire = (waiting: readonly HeldLock[]) => {
      const now = monotonicNow();
      const left: HeldLock[] = [];
      for (const lock of waiting) {
        if (!lock.renewing || !this.watched(lock)) continue;
        if (lock.validUntil > now) {
          left.push(lock);
          continue;
        }
        lock.renewing = false;
        this.expired(lock);
      }
      if (left.length > 0) arm(left);
    };
    arm(locks);
    return () => clearTimeout(timer);
  }

  /** Guards one lock, still in an unanswered batch, from its new validity on. */
  again(lock: HeldLock): void {
    this.single.get(lock)?.();
    this.single.set(lock, this.batch([lock]));
  }

  /** The lock's renewal was answered, or the lock ended: its own guard, if any, goes. */
  end(lock: HeldLock): void {
    this.single.get(lock)?.();
    this.single.delete(lock);
  }
}
