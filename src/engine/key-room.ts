import type { LockConnectionError } from '../lock.errors.js';
import type { LockEvent } from '../store/lock-store.interface.js';
import type { Waiter } from './waiter.js';

/**
 * The callers of this process that wait for one key, in arrival order, and what the store tells
 * them. It orders nobody: each caller keeps its own place in the store's line with its own
 * attempts (see `Wait`), and the room only passes on wake-ups. A turn wakes the caller it
 * names; a plain release wakes every caller where the store keeps a line (the line decides who
 * gets the lock), and the longest-waiting caller not woken already where it keeps none (so
 * that the callers of one process do not race each other for every release, and two releases
 * heard during one attempt wake two callers).
 */
export class KeyRoom {
  readonly waiters: Waiter[] = [];
  /** Notifications flow: a wake-up sent after an attempt of a caller here was sent reaches it. */
  subscribed = false;
  closed = false;
  /** Why the subscription failed, while it is tried again: its callers' last word, for now. */
  unreachable?: LockConnectionError;

  /**
   * @param queueing the store keeps a line of waiters (fair mode)
   * @param emptied called when the last caller has left
   */
  constructor(
    readonly key: string,
    private readonly queueing: boolean,
    private readonly emptied: (room: KeyRoom) => void,
  ) {}

  add(waiter: Waiter): void {
    this.waiters.push(waiter);
  }

  /** Takes a caller out; `false` if it was no longer here. */
  remove(waiter: Waiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    // A release it was woken for, and leaves unanswered (an attempt of its that ran before it
    // took the lock, or it gave up), goes on to the next caller.
    if (!this.queueing && waiter.woken) this.wakeNext();
    if (this.waiters.length === 0) this.emptied(this);
    return true;
  }

  /**
   * Notifications flow: a release between a caller's attempt and now went unheard, so every
   * caller here tries again.
   */
  start(): void {
    this.subscribed = true;
    this.unreachable = undefined;
    for (const waiter of [...this.waiters]) waiter.wake();
  }

  /** What the store told of the key: a release, or somebody's turn. */
  heard(event: LockEvent): void {
    if (event.type === 'turn') {
      this.waiters.find((waiter) => waiter.token === event.token)?.wake();
    } else if (this.queueing) {
      for (const waiter of [...this.waiters]) waiter.wake();
    } else {
      this.wakeNext();
    }
  }

  /**
   * Wakes the longest-waiting caller that is idle (no attempt out, no wake-up pending), or else
   * the first whose attempt is out and not woken yet: that attempt may have run before the
   * release, so the caller attempts again once it is answered. Each release is answered by an
   * attempt sent after it was heard, and costs at most one.
   */
  private wakeNext(): void {
    const idle = this.waiters.find((waiter) => !waiter.woken && !waiter.attempting);
    (idle ?? this.waiters.find((waiter) => !waiter.woken))?.wake();
  }

  /** A release here gave `token` the lock; `false` when that caller waits no more. */
  handOver(token: string, fencingToken: number, validFrom: number): boolean {
    const waiter = this.waiters.find((candidate) => candidate.token === token);
    return waiter?.handOver(fencingToken, validFrom) ?? false;
  }
}
