import type { HeldLock } from './held-lock.js';

/**
 * A lock taken for one piece of work (a `using` call, a `@WithLock` call), shared with the calls
 * for the same key nested in that work, in its async call chain, that reuse it instead of
 * waiting for themselves. A reuser may be detached (started from a timer or a promise nobody
 * awaits) and outlive the work that took the lock: the lock ends only once the work and every
 * reuser have settled, and no reuser can join a lock that is ending or no longer held.
 */
export class Tenure {
  /** The work that took the lock, and the reusers that have not settled yet. */
  private users = 1;
  private ending = false;
  /** Set when the work settles before its reusers: what their last one runs when it settles. */
  private whenSettled?: () => void;

  constructor(readonly lock: HeldLock) {}

  /** Counts a reuser in; `false` when the lock cannot be reused (it is ending, lost, or released). */
  join(): boolean {
    if (this.ending || !this.lock.held) return false;
    this.users++;
    return true;
  }

  /** A reuser has settled. */
  leave(): void {
    if (--this.users > 0) return;
    this.ending = true;
    this.whenSettled?.();
  }

  /**
   * The work that took the lock has settled: runs `then` (the release) once every reuser has
   * too, at once when none is left, which is the common case and costs no promise of its own.
   */
  end<T>(then: () => Promise<T>): Promise<T> {
    if (this.users === 1) {
      this.leave();
      return then();
    }
    const settled = new Promise<void>((resolve) => (this.whenSettled = resolve));
    this.leave();
    return settled.then(then);
  }
}
