import { monotonicNow } from './lock.js';
import {
  HANDOVER_LEASE,
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
  /**
   * The caller holds the lock, valid from monotonic `validFrom`: when the request whose answer
   * proved it (the caller's own attempt, or the release that handed it over) was sent.
   */
  acquired(fencingToken: number, validFrom: number): void;
  failed(error: unknown): void;
  /** The deadline passed; `pttl` is what the last attempt learned of the holder's TTL. */
  timedOut(pttl: number): void;
  /** An attempt succeeded after the caller had given up: the lock must be handed back. */
  abandoned(): void;
}

/** First and largest delay of the fallback re-check, for when a release message is lost. */
const FIRST_BACKOFF = 50;
const MAX_BACKOFF = 1_000;
/**
 * How long a key's subscription outlives its last waiter, in ms, and how many such idle
 * subscriptions a process keeps: callers that wait for a key again soon (every caller of a
 * contended key does) then cost no SUBSCRIBE and UNSUBSCRIBE per wait.
 */
const LINGER = 5_000;
const MAX_IDLE = 256;

interface KeyQueue {
  readonly key: string;
  readonly waiters: Waiter[];
  readonly timeouts: Map<Waiter, NodeJS.Timeout>;
  subscribed: boolean;
  unsubscribe?: () => void;
  /** Release messages heard so far. */
  messages: number;
  attempting: boolean;
  /** A release was announced while an attempt was on its way. */
  notified: boolean;
  fallback?: NodeJS.Timeout;
  fallbackAt: number;
  backoff: number;
  pttl: number;
  /** Nobody waits: the subscription lingers until this timer ends it. */
  linger?: NodeJS.Timeout;
  closed: boolean;
}

/**
 * Where callers wait for held locks. Per key, waiters of this process queue in arrival order
 * and only the head talks to Redis: it tries again when the store announces a release or its
 * turn, or, should that message be lost, after a fallback delay bounded by the holder's
 * remaining TTL and by a jittered exponential backoff. The others cost nothing until they reach
 * the head. A message never makes a caller a holder by itself: only the answer to a request
 * does, which the caller can date (see {@link Waiter.acquired}).
 */
export class Waiters {
  private readonly queues = new Map<string, KeyQueue>();
  /** Keys whose subscription lingers with nobody waiting, oldest first. */
  private readonly idle = new Set<KeyQueue>();
  /** Waiters that a release of this process served while their own attempt was on its way. */
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

  /**
   * How many release messages of `key` this process has heard, if it is subscribed to them:
   * taken before a first attempt and given to {@link wait}, it tells whether a release may have
   * come in between, unheard by anybody.
   */
  heard(key: string): number | undefined {
    const queue = this.queues.get(key);
    return queue?.subscribed ? queue.messages : undefined;
  }

  /** The longest-waiting caller of this process for `key`: the one a release here may serve. */
  successor(key: string): string | undefined {
    return this.queues.get(key)?.waiters[0]?.token;
  }

  /**
   * Queues a caller for `key`. `pttl` is the holder's TTL seen by its first attempt, or -1;
   * `heard` is what {@link heard} said before that attempt was sent.
   */
  wait(key: string, waiter: Waiter, pttl: number, heard?: number): void {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = this.open(key, pttl);
    } else if (queue.waiters.length === 0) {
      this.wake(queue, pttl);
    }
    queue.waiters.push(waiter);
    if (waiter.deadline < Infinity) this.armDeadline(queue, waiter);
    if (!queue.subscribed || queue.attempting || queue.waiters[0] !== waiter) return;
    // Subscribed since before the first attempt, with no message since: any release after that
    // attempt will be heard, so there is nothing to try until then.
    if (heard !== undefined && heard === queue.messages) this.fallBack(queue);
    else this.next(queue);
  }

  /**
   * A release by this process gave the lock to `token` ({@link successor}), valid from
   * `validFrom`. `false` when that caller no longer waits: the lock must then be released.
   */
  handOver(key: string, token: string, fencingToken: number, validFrom: number): boolean {
    const queue = this.queues.get(key);
    const waiter = queue?.waiters.find((candidate) => candidate.token === token);
    if (!queue || !waiter) return false;
    this.handedOver.add(waiter);
    this.remove(queue, waiter);
    waiter.acquired(fencingToken, validFrom);
    if (!queue.attempting) this.afterAttempt(queue, true);
    return true;
  }

  /**
   * The caller stops waiting (its wait was aborted): `left` is called if it was still waiting.
   * Should an attempt of its be on its way and succeed, the caller is told it was
   * {@link Waiter.abandoned}.
   */
  cancel(key: string, waiter: Waiter, left: () => void): void {
    const queue = this.queues.get(key);
    if (queue) this.drop(queue, waiter, left);
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
      messages: 0,
      attempting: false,
      notified: false,
      fallbackAt: Infinity,
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
          // A release between the first attempt and now went unheard: try once.
          else if (queue.waiters.length > 0) this.next(queue);
          else this.linger(queue);
        },
        (error: unknown) => this.failAll(queue, error),
      );
    return queue;
  }

  /** A lingering subscription gets waiters again. */
  private wake(queue: KeyQueue, pttl: number): void {
    clearTimeout(queue.linger);
    queue.linger = undefined;
    this.idle.delete(queue);
    queue.backoff = FIRST_BACKOFF;
    queue.pttl = pttl;
  }

  private failAll(queue: KeyQueue, error: unknown): void {
    for (const waiter of queue.waiters.splice(0)) {
      clearTimeout(queue.timeouts.get(waiter));
      waiter.failed(error);
    }
    this.end(queue);
  }

  private onRelease(queue: KeyQueue, message: string): void {
    queue.messages++;
    const head = queue.waiters[0];
    if (!head) return;
    const turn = parseHandover(message);
    if (turn !== undefined && turn !== head.token) {
      // Reserved for a waiter of another process: our head keeps its place. Should that waiter
      // not take it (it died, or hears too late), the reservation ends within the handover
      // lease, and nobody announces that: look again then.
      queue.pttl = HANDOVER_LEASE;
      if (!queue.attempting) this.fallBack(queue, true);
      return;
    }
    // A release, or our head's turn: its next attempt takes the lock.
    if (turn === undefined) {
      queue.backoff = FIRST_BACKOFF;
      queue.pttl = -1;
    }
    if (queue.attempting) queue.notified = true;
    else this.next(queue);
  }

  /** Lets the head of the queue try once. */
  private next(queue: KeyQueue): void {
    const head = queue.waiters[0];
    if (!head) {
      this.linger(queue);
      return;
    }
    if (!queue.subscribed || queue.attempting) return;
    this.stopFallback(queue);
    queue.attempting = true;
    queue.notified = false;
    const sentAt = monotonicNow();
    head.attempt().then(
      (result) => {
        queue.attempting = false;
        if (result.acquired) {
          if (this.remove(queue, head)) head.acquired(result.fencingToken, sentAt);
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
      this.linger(queue);
    } else if ((headChanged && this.queueing) || queue.notified) {
      this.next(queue);
    } else {
      this.fallBack(queue);
    }
  }

  /**
   * Arms the fallback re-check; with `sooner`, only if it would come before the one armed.
   */
  private fallBack(queue: KeyQueue, sooner = false): void {
    const jittered = queue.backoff * (0.75 + Math.random() / 2);
    const delay = queue.pttl >= 0 ? Math.min(jittered, queue.pttl + 1) : jittered;
    if (sooner && monotonicNow() + delay >= queue.fallbackAt) return;
    queue.backoff = Math.min(queue.backoff * 2, MAX_BACKOFF);
    this.stopFallback(queue);
    queue.fallbackAt = monotonicNow() + delay;
    queue.fallback = setTimeout(() => {
      queue.fallbackAt = Infinity;
      this.next(queue);
    }, delay);
  }

  private stopFallback(queue: KeyQueue): void {
    clearTimeout(queue.fallback);
    queue.fallbackAt = Infinity;
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
    this.drop(queue, waiter, () => waiter.timedOut(queue.pttl));
  }

  /**
   * Takes a caller that stops waiting out of the line, tells it (`left`), and lets the next
   * one go on; `false` if it was no longer there.
   */
  private drop(queue: KeyQueue, waiter: Waiter, left: () => void): boolean {
    const wasHead = queue.waiters[0] === waiter;
    if (!this.remove(queue, waiter)) return false;
    left();
    // While the old head's attempt is on its way, its result decides what comes next.
    if (queue.attempting) return true;
    if (queue.waiters.length === 0) this.linger(queue);
    else if (wasHead) this.afterAttempt(queue, true);
    return true;
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

  /** Nobody waits any more: keeps the subscription a while for the next waiter, if any. */
  private linger(queue: KeyQueue): void {
    this.stopFallback(queue);
    if (queue.closed || queue.linger || !queue.subscribed) return;
    this.idle.add(queue);
    queue.linger = setTimeout(() => this.end(queue), LINGER);
    queue.linger.unref();
    if (this.idle.size > MAX_IDLE) {
      const [oldest] = this.idle;
      this.end(oldest);
    }
  }

  private end(queue: KeyQueue): void {
    if (queue.closed) return;
    queue.closed = true;
    this.stopFallback(queue);
    clearTimeout(queue.linger);
    this.idle.delete(queue);
    if (this.queues.get(queue.key) === queue) this.queues.delete(queue.key);
    queue.unsubscribe?.();
  }
}
