import { monotonicNow } from './clock.js';

/** Keys kept before the first sweep of the closed windows. */
const SWEEP_MIN = 1_024;

/**
 * The throttle windows that the attempts of this process saw, per key: whether the last refusal
 * of a key came from a throttle whose window was open (see `AcquireAttempt.windowLeft`), and
 * until when, on this process's monotonic clock. Every caller waiting for the key reads it when
 * its wait runs out, also one whose own last attempt did not see the window.
 */
export class SeenWindows {
  /** Per key, the monotonic ms at which the window seen last closes. */
  private readonly ends = new Map<string, number>();
  private sweepAt = SWEEP_MIN;

  /** An attempt on `key` was answered: refused with `windowLeft`, or anything else (none). */
  saw(key: string, windowLeft: number | undefined): void {
    if (windowLeft === undefined) {
      this.ends.delete(key);
      return;
    }
    this.ends.set(key, monotonicNow() + windowLeft);
    if (this.ends.size >= this.sweepAt) this.sweep();
  }

  /** What is left of the window that the last refusal of `key` saw, while it is open. */
  left(key: string): number | undefined {
    const end = this.ends.get(key);
    if (end === undefined) return undefined;
    const left = Math.ceil(end - monotonicNow());
    if (left > 0) return left;
    this.ends.delete(key);
    return undefined;
  }

  private sweep(): void {
    const now = monotonicNow();
    for (const [key, end] of this.ends) if (end <= now) this.ends.delete(key);
    this.sweepAt = Math.max(SWEEP_MIN, 2 * this.ends.size);
  }
}
