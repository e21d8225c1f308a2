import { monotonicNow } from './lock.js';
import {
  parseHandover,
  type AcquireAttempt,
  type LockStore,
} from './store/lock-store.interface.js';

/** A caller waiting for a lock, as the waiting room sees it. */
export interface Waiter {
  /** The token the caller's lock will carry. */
  readonly token: string;
  /** Monotonic ms after which the caller gives up. */
  readonly deadline: number;
  /** One atomic acquisition attempt with the caller's token and TTL. */
  attempt(): Promise<AcquireAttempt>;
  /** The caller holds the lock: it took it, or (`handedOver`) the store gave it in its turn. */
  acquired(fencingToken: number, handedOver: boolean): void;
  failed(error: unknown): void;
  /** The deadline passed; `pttl` is what the last attempt learned of the holder's TTL. */
  timedOut(pttl: number): void;
  /** An attempt succeeded after the caller had given up: the lock must be handed back. */
  abandoned(): void;
}

/** First and largest delay of the fallback re-check, for when a release message is lost. */
const FIRST_BACKOFF = 50;
const MAX_BACKOFF = 1_000;

interface KeyQueue {
  readonly key: string;
  readonly waiters: Waiter[];
  readonly timeouts: Map<Waiter, NodeJS.Timeout>;
  subscribed: boolean;
  unsubscribe?: () => void;
  attempting: boolean;
  /** A release was announced while an attempt was on its way. */
  notified: boolean;
  fallback?: NodeJS.Timeout;
  backoff: number;
  pttl: number;
  closed: boolean;
}

/**
 * Where callers wait for held locks. Per key, waiters of this process queue in arrival order
 * and only the head talks to Redis: it tries again when the store announces a release, or,
 * should that message be lost, after a fallback delay bounded by the holder's remaining TTL
 * and by a jittered exponential backoff. The others cost nothing until they reach the head.
 */
export class Waiters {
  private readonly queues = new Map<string, KeyQueue>();
  /** Waiters that a handover message served while their own attempt was on its way. */
  private readonly handedOver = new WeakSet<Waiter>();

  /**
   * @param queueing the store keeps a queue (fair mode): a caller that becomes the head here
   *   tries at once, which takes its place in that queue; without one it would only find the
   *   lock taken, and waits for the release instead
   */
  constructor(
    private readonly store: LockStore,
    private readonly queueing: boolean,
  ) {}

  /** Whether callers of this process are already waiting for `key`. */
  has(key: string): boolean {
    return (this.queues.get(key)?.waiters.length ?? 0) > 0;
  }

  /** Queues a caller for `key`; `pttl` is the holder's TTL seen by its first attempt, or -1. */
  wait(key: string, waiter: Waiter, pttl: number): void {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = this.open(key, pttl);
    }
    queue.waiters.push(waiter);
    if (waiter.deadline < Infinity) this.armDeadline(queue, waiter);
  }

  /**
   * Fails every waiting caller with `error` and ends all subscriptions. Returns the key and
   * token of each, for the caller to take them out of the store's queues.
   */
  close(error: Error): { key: string; token: string }[] {
    const left = [...this.queues.values()].flatMap((queue) =>
      queue.waiters.map((waiter) => ({ key: queue.key, token: waiter.token })),
    );
    for (const queue of [...this.queues.values()]) this.failAll(queue, error);
    return left;
  }

  private open(key: string, pttl: number): KeyQueue {
    const queue: KeyQueue = {
      key,
      waiters: [],
      timeouts: new Map(),
      subscribed: false,
      attempting: false,
      notified: false,
      backoff: FIRST_BACKOFF,
      pttl,
      closed: false,
    };
    this.queues.set(key, queue);
    this.store
      .subscribe(key, (message) => this.onRelease(queue, message))
      .then(
        (unsubscribe) => {
          queue.unsubscribe = unsubscribe;
          queue.subscribed = true;
          if (queue.closed) unsubscribe();
          else this.next(queue);
        },
        (error: unknown) => this.failAll(queue, error),
      );
    return queue;
  }

  private failAll(queue: KeyQueue, error: unknown): void {
    for (const waiter of queue.waiters.splice(0)) {
      clearTimeout(queue.timeouts.get(waiter));
      waiter.failed(error);
    }
    this.end(queue);
  }

  private onRelease(queue: KeyQueue, message: string): void {
    const handover = parseHandover(message);
    if (handover) {
      // The lock went to a queued waiter. If it is one of ours, it holds the lock now; if not,
      // our head keeps its place in the store's queue and has nothing to do.
      const waiter = queue.waiters.find((candidate) => candidate.token === handover.token);
      if (!waiter) return;
      this.handedOver.add(waiter);
      this.remove(queue, waiter);
      waiter.acquired(handover.fencingToken, true);
      if (!queue.attempting) this.afterAttempt(queue, true);
      return;
    }
    queue.backoff = FIRST_BACKOFF;
    queue.pttl = -1;
    if (queue.attempting) queue.notified = true;
    else this.next(queue);
  }

  /** Lets the head of the queue try once. */
  private next(queue: KeyQueue): void {
    const head = queue.waiters[0];
    if (!head) {
      this.end(queue);
      return;
    }
    if (!queue.subscribed || queue.attempting) return;
    clearTimeout(queue.fallback);
    queue.attempting = true;
    queue.notified = false;
    head.attempt().then(
      (result) => {
        queue.attempting = false;
        if (result.acquired) {
          if (this.remove(queue, head)) head.acquired(result.fencingToken, false);
          else if (!this.handedOver.has(head)) head.abandoned();
          queue.pttl = -1;
          // A release announced meanwhile came before this grant (RedLock announces each
          // release once per master): the next caller has to wait for this holder's release.
          queue.notified = false;
        } else {
          queue.pttl = result.pttl;
        }
        this.afterAttempt(queue, queue.waiters[0] !== head);
      },
      (error: unknown) => {
        queue.attempting = false;
        if (this.remove(queue, head)) head.failed(error);
        this.afterAttempt(queue, queue.waiters[0] !== head);
      },
    );
  }

  /**
   * After an attempt: with a queueing store, a new head tries at once, to take its place in
   * line; otherwise the head tries again when a release is announced, or after the fallback
   * delay.
   */
  private afterAttempt(queue: KeyQueue, headChanged: boolean): void {
    if (queue.waiters.length === 0) {
      this.end(queue);
    } else if ((headChanged && this.queueing) || queue.notified) {
      this.next(queue);
    } else {
      this.fallBack(queue);
    }
  }

  private fallBack(queue: KeyQueue): void {
    const jittered = queue.backoff * (0.75 + Math.random() / 2);
    const delay = queue.pttl >= 0 ? Math.min(jittered, queue.pttl + 1) : jittered;
    queue.backoff = Math.min(queue.backoff * 2, MAX_BACKOFF);
    clearTimeout(queue.fallback);
    queue.fallback = setTimeout(() => this.next(queue), delay);
  }

  private armDeadline(queue: KeyQueue, waiter: Waiter): void {
    const timer = setTimeout(
      () => this.giveUp(queue, waiter),
      Math.ceil(Math.max(0, waiter.deadline - monotonicNow())),
    );
    queue.timeouts.set(waiter, timer);
  }

  private giveUp(queue: KeyQueue, waiter: Waiter): void {
    // Timers count on the event loop's millisecond clock and can fire a little early by the
    // monotonic one; a caller must have waited its full waitTimeout.
    if (monotonicNow() < waiter.deadline && queue.waiters.includes(waiter)) {
      this.armDeadline(queue, waiter);
      return;
    }
    const wasHead = queue.waiters[0] === waiter;
    if (!this.remove(queue, waiter)) return;
    waiter.timedOut(queue.pttl);
    // While the old head's attempt is on its way, its result decides what comes next.
    if (queue.attempting) return;
    if (queue.waiters.length === 0) this.end(queue);
    else if (wasHead) this.afterAttempt(queue, true);
  }

  /** Takes a waiter out of the queue; `false` if it was no longer there. */
  private remove(queue: KeyQueue, waiter: Waiter): boolean {
    const index = queue.waiters.indexOf(waiter);
    if (index < 0) return false;
    queue.waiters.splice(index, 1);
    clearTimeout(queue.timeouts.get(waiter));
    queue.timeouts.delete(waiter);
    return true;
  }

  private end(queue: KeyQueue): void {
    if (queue.closed) return;
    queue.closed = true;
    clearTimeout(queue.fallback);
    if (this.queues.get(queue.key) === queue) this.queues.delete(queue.key);
    queue.unsubscribe?.();
  }
}
