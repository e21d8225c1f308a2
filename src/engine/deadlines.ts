import { monotonicNow } from './clock.js';
import type { Waiter } from './waiter.js';

/** The timers that end the waits of a key's callers at their deadlines. */
export class Deadlines {
  private readonly timers = new Map<Waiter, NodeJS.Timeout>();

  /** @param due called once a caller's deadline has passed, if it was not cleared before */
  constructor(private readonly due: (waiter: Waiter) => void) {}

  /** Arms the caller's deadline, if it has one. */
  arm(waiter: Waiter): void {
    if (waiter.deadline === Infinity) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(waiter);
        // Timers count on the event loop's millisecond clock and can fire a little early by the
        // monotonic one; a caller must have waited its full waitTimeout.
        if (monotonicNow() < waiter.deadline) this.arm(waiter);
        else this.due(waiter);
      },
      Math.ceil(Math.max(0, waiter.deadline - monotonicNow())),
    );
    this.timers.set(waiter, timer);
  }

  /** The caller no longer waits. */
  clear(waiter: Waiter): void {
    clearTimeout(this.timers.get(waiter));
    this.timers.delete(waiter);
  }
}
