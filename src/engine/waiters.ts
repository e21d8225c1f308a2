import { LockConnectionError } from '../lock.errors.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { KeyQueue } from './key-queue.js';
import { SeenWindows } from './seen-windows.js';
import type { Waiter } from './waiter.js';

export type { Waiter } from './waiter.js';

/**
 * How long a key's subscription outlives its last waiter, in ms, and how many such idle
 * subscriptions a process keeps: callers that wait for a key again soon (every caller of a
 * contended key does) then cost no SUBSCRIBE and UNSUBSCRIBE per wait.
 */
const LINGER = 5_000;
const MAX_IDLE = 256;

/** First and largest delay before a failed subscription is tried again, in ms. */
const RESUBSCRIBE_FIRST = 100;
const RESUBSCRIBE_MAX = 1_000;

/**
 * Where the callers of this process wait for held locks: a {@link KeyQueue} per key, and the
 * subscription to the key's release messages that feeds it.
 */
export class Waiters {
  /** The throttle windows that the last refusal of each key saw. */
  readonly windows = new SeenWindows();
  private readonly queues = new Map<string, KeyQueue>();
  /** Queues with nobody waiting whose subscription lingers, oldest first, and their timers. */
  private readonly idle = new Map<KeyQueue, NodeJS.Timeout>();
  /** How to end each queue's subscription. */
  private readonly subscriptions = new Map<KeyQueue, () => void>();
  /** Queues whose subscription failed, and the timer of their next try. */
  private readonly resubscribing = new Map<KeyQueue, NodeJS.Timeout>();

  /**
   * @param queueing the store keeps a queue of waiters (fair mode)
   * @param instance what this instance's tokens end with, which the store wakes it by
   */
  constructor(
    private readonly store: LockStore,
    private readonly queueing: boolean,
    private readonly instance?: string,
  ) {}

  /** Whether callers of this process are already waiting for `key`. */
  has(key: string): boolean {
    return (this.queues.get(key)?.waiters.length ?? 0) > 0;
  }

  /**
   * How many plain releases of `key` this process has heard, if it is subscribed to them:
   * taken before a first attempt and given to {@link wait}, it tells whether a release may have
   * come in between, unheard by anybody.
   */
  heard(key: string): number | undefined {
    const queue = this.queues.get(key);
    return queue?.subscribed ? queue.releases : undefined;
  }

  /** The longest-waiting caller of this process for `key`: the one a release here may serve. */
  successor(key: string): string | undefined {
    return this.queues.get(key)?.waiters[0]?.token;
  }

  /**
   * Queues a caller for `key`. `pttl` is the holder's TTL seen by its first attempt, or -1;
   * `heard` is what {@link heard} said before that attempt was sent; `late`: see `KeyQueue.add`.
   */
  wait(
    key: string,
    waiter: Waiter,
    pttl: number,
    heard?: number,
    late?: LockConnectionError,
  ): void {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = this.open(key, pttl);
    } else if (this.idle.has(queue)) {
      clearTimeout(this.idle.get(queue));
      this.idle.delete(queue);
      queue.reopen(pttl);
    }
    queue.add(waiter, heard, late);
  }

  /**
   * A release by this process gave the lock to `token` ({@link successor}), valid from
   * `validFrom`. `false` when that caller no longer waits: the lock must then be released.
   */
  handOver(key: string, token: string, fencingToken: number, validFrom: number): boolean {
    return this.queues.get(key)?.handOver(token, fencingToken, validFrom) ?? false;
  }

  /**
   * The caller stops waiting (its wait was aborted): `left` is called if it was still waiting.
   * Should an attempt of its be on its way and succeed, the caller is told it was
   * {@link Waiter.abandoned}.
   */
  cancel(key: string, waiter: Waiter, left: () => void): void {
    this.queues.get(key)?.drop(waiter, left);
  }

  /**
   * Fails the waiting callers that `keep` does not keep with the error `errorOf` each, as
   * if they had given up. Returns the key and token of each, for the caller to make sure they
   * left the store's queues.
   */
  refuse(
    errorOf: (waiter: Waiter) => Error,
    keep: (waiter: Waiter) => boolean,
  ): { key: string; token: string }[] {
    const left: { key: string; token: string }[] = [];
    for (const queue of [...this.queues.values()]) {
      for (const waiter of [...queue.waiters]) {
        if (keep(waiter)) continue;
        queue.drop(waiter, () => waiter.failed(errorOf(waiter)));
        left.push({ key: queue.key, token: waiter.token });
      }
    }
    return left;
  }

  /**
   * Fails every waiting caller with the error `errorOf` it, and ends all subscriptions.
   * Returns the key and token of each, for the caller to take them out of the store's queues.
   */
  close(errorOf: (waiter: Waiter) => Error): { key: string; token: string }[] {
    const left = [...this.queues.values()].flatMap((queue) =>
      queue.waiters.map((waiter) => ({ key: queue.key, token: waiter.token })),
    );
    for (const queue of [...this.queues.values()]) this.fail(queue, errorOf);
    return left;
  }

  /**
   * How the queue of `key` renews the places of the callers behind its head, where the store's
   * places lapse by lease (`LockStore.keepPlaces`). A renewal that fails costs at most those
   * callers their places: they queue again when they reach the head.
   */
  private keepPlaces(key: string): ((tokens: string[]) => void) | undefined {
    const { store } = this;
    if (!store.keepPlaces) return undefined;
    return (tokens) => void store.keepPlaces?.(key, tokens).catch(() => undefined);
  }

  private open(key: string, pttl: number): KeyQueue {
    const queue = new KeyQueue(
      key,
      pttl,
      this.queueing,
      (emptied) => this.linger(emptied),
      this.keepPlaces(key),
    );
    this.queues.set(key, queue);
    this.subscribe(queue, RESUBSCRIBE_FIRST);
    return queue;
  }

  /**
   * Subscribes the queue to its key's messages. A subscription that the connection failed (a
   * failover, a restart, a cut connection) costs the waiters time, not their wait: they are
   * served as if a release message had been lost, by the fallback re-check, while the
   * subscription is tried again, more slowly each time; a caller whose deadline comes first
   * fails with that error. A refusal by the server (a missing channel permission, say) fails
   * the waiters at once.
   */
  private subscribe(queue: KeyQueue, retryIn: number): void {
    this.store
      .subscribe(queue.key, (event) => queue.heard(event), this.instance)
      .then(
        (unsubscribe) => {
          if (queue.closed) {
            unsubscribe();
            return;
          }
          this.subscriptions.set(queue, unsubscribe);
          queue.start();
        },
        (error: unknown) => {
          if (queue.closed) return;
          if (!connectionFailed(error) || queue.waiters.length === 0) {
            this.fail(queue, () => error);
            return;
          }
          queue.unreachableFor(error);
          if (!queue.subscribed) queue.start();
          const timer = setTimeout(() => {
            this.resubscribing.delete(queue);
            if (queue.waiters.length === 0) this.end(queue);
            else this.subscribe(queue, Math.min(2 * retryIn, RESUBSCRIBE_MAX));
          }, retryIn);
          timer.unref();
          this.resubscribing.set(queue, timer);
        },
      );
  }

  /** Fails the queue's waiters, each with the error `errorOf` it, and ends its subscription. */
  private fail(queue: KeyQueue, errorOf: (waiter: Waiter) => unknown): void {
    queue.failAll(errorOf);
    this.end(queue);
  }

  /** Nobody waits any more: keeps the subscription a while for the next waiter, if any. */
  private linger(queue: KeyQueue): void {
    queue.stop();
    if (queue.closed || this.idle.has(queue) || !queue.subscribed) return;
    const timer = setTimeout(() => this.end(queue), LINGER);
    timer.unref();
    this.idle.set(queue, timer);
    if (this.idle.size > MAX_IDLE) {
      const [oldest] = this.idle.keys();
      this.end(oldest);
    }
  }

  private end(queue: KeyQueue): void {
    if (queue.closed) return;
    queue.closed = true;
    queue.stop();
    clearTimeout(this.idle.get(queue));
    this.idle.delete(queue);
    clearTimeout(this.resubscribing.get(queue));
    this.resubscribing.delete(queue);
    if (this.queues.get(queue.key) === queue) this.queues.delete(queue.key);
    this.subscriptions.get(queue)?.();
    this.subscriptions.delete(queue);
  }
}

/**
 * Whether a call failed because the connection did (no answer in time, a closed, reset or
 * refused connection, a client that gave up its retries), which a later try may get through,
 * rather than by the server's refusal.
 */
function connectionFailed(error: unknown): error is LockConnectionError {
  if (!(error instanceof LockConnectionError)) return false;
  const { cause } = error;
  return cause.name === 'TimeoutError' || CONNECTION_FAILURE.test(cause.message);
}

/** What the clients' errors say when the connection failed (ioredis's retries and aborts too). */
const CONNECTION_FAILURE =
  /closed|ended|reset|refused|ECONN|EPIPE|socket|connect|timed? ?out|max retries|aborted/i;
