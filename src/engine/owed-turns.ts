import type { Waiter } from './waiter.js';

/**
 * Turns announced for tokens that do not wait in the queue that hears them, kept for callers
 * about to join it (their first attempt is on its way). One release can announce many at once:
 * on ZooKeeper, a writer's departure wakes every reader of this process behind it, some of them
 * between their first attempt's answer and joining the queue.
 */
const RECENT_TURNS = 64;

/**
 * The turns that a store announced to the callers of one key in this process (see the `turn`
 * event), each owed an attempt of the caller it names. Only the head of a queue tries, and a
 * turn makes its caller the head; but a later turn can put another caller before it while an
 * attempt is on its way, and should that one be refused (a writer woken by its predecessor's
 * departure, with a reader still ahead of it), it stays the head. The caller it passed keeps
 * its turn here until it has tried: nothing else would wake it, for a store such as ZooKeeper
 * announces a turn once, and a caller behind the head has no fallback re-check.
 */
export class OwedTurns {
  private readonly recent: string[] = [];
  private readonly owed = new WeakSet<Waiter>();

  /** A turn for `token`, whose caller is `waiter` if it waits in the queue. */
  announced(token: string, waiter: Waiter | undefined): void {
    if (waiter) this.owed.add(waiter);
    else if (this.recent.push(token) > RECENT_TURNS) this.recent.shift();
  }

  /**
   * A caller joins the queue: `true`, and it is owed an attempt, if its turn came meanwhile or
   * `owed` says it is anyway.
   */
  joined(waiter: Waiter, owed = false): boolean {
    if (!owed && !this.recent.includes(waiter.token)) return false;
    this.owed.add(waiter);
    return true;
  }

  /** The caller makes an attempt, which a turn announced before it was sent is answered by. */
  served(waiter: Waiter): void {
    this.owed.delete(waiter);
  }

  /** Puts the first of `waiters` that is owed an attempt at their head; `false` if none is. */
  putFirst(waiters: Waiter[]): boolean {
    const owed = waiters.findIndex((waiter) => this.owed.has(waiter));
    if (owed > 0) waiters.unshift(...waiters.splice(owed, 1));
    return owed >= 0;
  }
}
