import { LockConnectionError } from '../lock.errors.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { KeyRoom } from './key-room.js';
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
 * Where the callers of this process wait for held locks: a {@link KeyRoom} per key, and the
 * subscription to the key's notifications that feeds it.
 */
export class Waiters {
  /** The throttle windows that the last refusal of each key saw. */
  readonly windows = new SeenWindows();
  private readonly rooms = new Map<string, KeyRoom>();
  /** Rooms with nobody waiting whose subscription lingers, oldest first, and their timers. */
  private readonly idle = new Map<KeyRoom, NodeJS.Timeout>();
  /** How to end each room's subscription. */
  private readonly subscriptions = new Map<KeyRoom, () => void>();
  /** Rooms whose subscription failed, and the timer of their next try. */
  private readonly resubscribing = new Map<KeyRoom, NodeJS.Timeout>();

  /**
   * @param queueing the store keeps a line of waiters (fair mode)
   * @param instance what this instance's tokens end with, which the store wakes it by
   */
  constructor(
    private readonly store: LockStore,
    private readonly queueing: boolean,
    private readonly instance?: string,
  ) {}

  /** Whether callers of this process are already waiting for `key`. */
  has(key: string): boolean {
    return (this.rooms.get(key)?.waiters.length ?? 0) > 0;
  }

  /** Whether this process listens for `key`'s notifications (or is about to): callers wait there. */
  listening(key: string): boolean {
    return this.rooms.has(key);
  }

  /**
   * Lets a caller into the room of `key`, opening it (and subscribing) unless `ifOpen` and
   * nobody waits or lingers there; the room, or `undefined` if it let nobody in.
   */
  join(key: string, waiter: Waiter, ifOpen = false): KeyRoom | undefined {
    let room = this.rooms.get(key);
    if (!room) {
      if (ifOpen) return undefined;
      room = this.open(key);
    } else if (this.idle.has(room)) {
      clearTimeout(this.idle.get(room));
      this.idle.delete(room);
    }
    room.add(waiter);
    return room;
  }

  /** The longest-waiting caller of this process for `key`: the one a release here may serve. */
  successor(key: string): string | undefined {
    return this.rooms.get(key)?.waiters[0]?.token;
  }

  /**
   * A release by this process gave the lock to `token` ({@link successor}), valid from
   * `validFrom`. `false` when that caller no longer waits: the lock must then be released.
   */
  handOver(key: string, token: string, fencingToken: number, validFrom: number): boolean {
    return this.rooms.get(key)?.handOver(token, fencingToken, validFrom) ?? false;
  }

  /**
   * Fails the waiting callers that `keep` does not keep with the error `errorOf` each. Returns
   * the key and token of each, for the caller to make sure they left the store's lines.
   */
  refuse(
    errorOf: (waiter: Waiter) => Error,
    keep: (waiter: Waiter) => boolean,
  ): { key: string; token: string }[] {
    const left: { key: string; token: string }[] = [];
    for (const room of [...this.rooms.values()]) {
      for (const waiter of [...room.waiters]) {
        if (keep(waiter)) continue;
        left.push({ key: room.key, token: waiter.token });
        waiter.fail(errorOf(waiter));
      }
    }
    return left;
  }

  /**
   * Fails every waiting caller with the error `errorOf` it, and ends all subscriptions.
   * Returns the key and token of each, for the caller to take them out of the store's lines.
   */
  close(errorOf: (waiter: Waiter) => Error): { key: string; token: string }[] {
    const left = [...this.rooms.values()].flatMap((room) =>
      room.waiters.map((waiter) => ({ key: room.key, token: waiter.token })),
    );
    for (const room of [...this.rooms.values()]) this.fail(room, errorOf);
    return left;
  }

  private open(key: string): KeyRoom {
    const room = new KeyRoom(key, this.queueing, (emptied) => this.linger(emptied));
    this.rooms.set(key, room);
    this.subscribe(room, RESUBSCRIBE_FIRST);
    return room;
  }

  /**
   * Subscribes the room to its key's notifications. A subscription that the connection failed
   * (a failover, a restart, a cut connection) costs the waiters time, not their wait: they are
   * served by their re-checks, as if a release message had been lost, while the subscription is
   * tried again, more slowly each time; a caller whose deadline comes first fails with that
   * error. A refusal by the server (a missing channel permission, say) fails the waiters at once.
   */
  private subscribe(room: KeyRoom, retryIn: number): void {
    this.store
      .subscribe(room.key, (event) => room.heard(event), this.instance)
      .then(
        (unsubscribe) => {
          if (room.closed) {
            unsubscribe();
            return;
          }
          this.subscriptions.set(room, unsubscribe);
          if (room.waiters.length === 0) this.linger(room);
          room.start();
        },
        (error: unknown) => {
          if (room.closed) return;
          if (!connectionFailed(error) || room.waiters.length === 0) {
            this.fail(room, () => errorFrom(error));
            return;
          }
          room.unreachable = error;
          const timer = setTimeout(() => {
            this.resubscribing.delete(room);
            if (room.waiters.length === 0) this.end(room);
            else this.subscribe(room, Math.min(2 * retryIn, RESUBSCRIBE_MAX));
          }, retryIn);
          timer.unref();
          this.resubscribing.set(room, timer);
        },
      );
  }

  /** Fails the room's waiters, each with the error `errorOf` it, and ends its subscription. */
  private fail(room: KeyRoom, errorOf: (waiter: Waiter) => Error): void {
    this.end(room);
    for (const waiter of [...room.waiters]) waiter.fail(errorOf(waiter));
  }

  /** Nobody waits any more: keeps the subscription a while for the next waiter, if any. */
  private linger(room: KeyRoom): void {
    if (room.closed || this.idle.has(room) || !this.subscriptions.has(room)) return;
    const timer = setTimeout(() => this.end(room), LINGER);
    timer.unref();
    this.idle.set(room, timer);
    if (this.idle.size > MAX_IDLE) {
      const [oldest] = this.idle.keys();
      this.end(oldest);
    }
  }

  private end(room: KeyRoom): void {
    if (room.closed) return;
    room.closed = true;
    clearTimeout(this.idle.get(room));
    this.idle.delete(room);
    clearTimeout(this.resubscribing.get(room));
    this.resubscribing.delete(room);
    if (this.rooms.get(room.key) === room) this.rooms.delete(room.key);
    this.subscriptions.get(room)?.();
    this.subscriptions.delete(room);
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

/** What a failed subscription fails its waiters with: an `Error`, whatever the store threw. */
function errorFrom(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
