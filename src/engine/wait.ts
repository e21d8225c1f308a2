import { LockConnectionError, LockShuttingDownError } from '../lock.errors.js';
import type { AcquireAttempt } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';
import type { KeyRoom } from './key-room.js';
import type { Waiter } from './waiter.js';
import type { Waiters } from './waiters.js';

/** First and largest delay of the re-check, for when a wake-up is lost, in ms. */
const FIRST_BACKOFF = 50;
const MAX_BACKOFF = 1_000;

/** What a wait asks of the acquisition it serves. */
export interface WaitingCaller {
  readonly name: string;
  readonly key: string;
  readonly token: string;
  /** Monotonic ms after which the caller gives up. */
  readonly deadline: number;
  readonly insideLock: boolean;
  readonly signal?: AbortSignal;
  /** The store keeps a line of waiters: each attempt takes or keeps the caller's place in it. */
  readonly queueing: boolean;
  /** One atomic attempt; `first`: the caller's first, which shutdown lets finish. */
  attempt(first: boolean): Promise<AcquireAttempt>;
  /** Makes the caller a holder of the lock. @throws when it may not start work under it */
  hold(fencingToken: number, validFrom: number): HeldLock;
  /** The error of a grant whose validity, counted from `validFrom`, ran out before its answer. */
  late(validFrom: number): LockConnectionError | undefined;
  /** Shutdown refuses the caller. */
  refused(): boolean;
  /** Leaves the store's line, giving back what an attempt of the caller's took. */
  leave(): void;
  /** The caller starts to wait (for telemetry). */
  waiting(): void;
  /** What the caller fails with when its deadline comes: `pttl` is the holder's last TTL seen. */
  notAcquired(pttl: number): Error;
}

/**
 * One caller's way to a held lock, in one loop: attempt; if refused, wait for its own wake-up,
 * its deadline, its abort or a re-check; attempt again. Where the store keeps a line, every
 * attempt takes or renews the caller's place in it, and the store grants the lock only to the
 * head of the line: the store's line is the only order. The caller is in its key's room (so
 * that a wake-up reaches it) before it sends each attempt but the very first of a key nobody
 * here waits for; after that one, joining the room subscribes, and notifications that begin to
 * flow wake it again. A wake-up heard while an attempt is on its way makes it attempt again
 * once that one is answered: none is lost.
 */
export class Wait implements Waiter {
  readonly name: string;
  readonly token: string;
  readonly insideLock: boolean;
  private room?: KeyRoom;
  private done = false;
  /** A wake-up came since the last attempt was sent, which no attempt has answered yet. */
  woken = false;
  /** An attempt of the caller's is out. */
  attempting = false;
  /** A release of this process gave the caller the lock. */
  private handedOver?: { fencingToken: number; validFrom: number };
  private nudge?: () => void;
  private deadlineTimer?: NodeJS.Timeout;
  private backoff = FIRST_BACKOFF;
  /** What the last answer told of the holder's TTL, or -1. */
  private pttl = -1;
  /** The caller's last word from the store, when it was that the store could not be reached. */
  private unreachable?: LockConnectionError;
  /** An attempt of the caller's was answered: its key's subscription failing is no verdict. */
  private answered = false;
  private settle!: { resolve: (lock: HeldLock) => void; reject: (error: unknown) => void };

  constructor(
    private readonly caller: WaitingCaller,
    private readonly waiters: Waiters,
  ) {
    ({ name: this.name, token: this.token, insideLock: this.insideLock } = caller);
  }

  /** Whether the caller still waits: what an attempt of its took in the store is still its own. */
  get waiting(): boolean {
    return !this.done;
  }

  /**
   * The lock, once an attempt (or a release of this process) gives it to the caller; `answered`:
   * the first attempt, made already, and when it was sent.
   */
  run(answered?: { answer: AcquireAttempt; sentAt: number }): Promise<HeldLock> {
    return new Promise<HeldLock>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.armDeadline();
      this.caller.signal?.addEventListener('abort', this.abort, { once: true });
      // Where callers of this process wait already, wake-ups flow: the first attempt hears them.
      this.room = this.waiters.join(this.caller.key, this, true);
      this.loop(answered).catch((error: unknown) => this.stop(error));
    });
  }

  wake(): void {
    this.woken = true;
    this.backoff = FIRST_BACKOFF;
    this.nudge?.();
  }

  handOver(fencingToken: number, validFrom: number): boolean {
    if (this.done) return false;
    this.handedOver = { fencingToken, validFrom };
    this.wake();
    return true;
  }

  fail(error: Error): void {
    this.stop(error);
  }

  private async loop(answered?: { answer: AcquireAttempt; sentAt: number }): Promise<void> {
    for (let first = true; ; first = false) {
      this.woken = false;
      const sentAt = first && answered ? answered.sentAt : monotonicNow();
      const answer = first
        ? (answered?.answer ?? (await this.firstAnswer()))
        : await this.ask(false);
      // The first attempt went out before the caller was in a room, and the room it joined
      // began to flow since: a turn for it may have come before it was there to hear it.
      if (first && answered && this.caller.queueing && this.room?.subscribed) this.woken = true;
      if (this.done) {
        // Given up while the attempt was on its way: what it took goes back.
        if (answer?.acquired) this.caller.leave();
        return;
      }
      if (answer?.acquired) {
        const late = this.caller.late(sentAt);
        if (late === undefined) return this.finish(answer.fencingToken, sentAt);
        // Answered after its validity (the store paused): the lock may be another's by now.
        // The caller asks again at once, which renews it if it is still its own.
        this.unreachable = late;
        continue;
      }
      if (this.takeHandOver()) return;
      if (answer) [this.pttl, this.unreachable, this.answered] = [answer.pttl, undefined, true];
      if (this.caller.refused()) throw new LockShuttingDownError(this.name);
      if (first) this.caller.waiting();
      this.room ??= this.waiters.join(this.caller.key, this);
      if (!this.woken) await this.sleep();
      if (this.done || this.takeHandOver()) return;
    }
  }

  /** The first attempt, unless the caller waits its turn behind others of this process. */
  private firstAnswer(): Promise<AcquireAttempt | undefined> {
    return this.behindOthers() ? Promise.resolve(undefined) : this.ask(true);
  }

  /**
   * Without a line in the store, a new caller behind callers of this process that already wait
   * for the key waits its turn here instead of trying first: otherwise a holder that releases
   * and asks again would win every time.
   */
  private behindOthers(): boolean {
    return !this.caller.queueing && this.room !== undefined && this.room.waiters[0] !== this;
  }

  /** One attempt; `undefined` when the store did not answer, which only costs time. */
  private async ask(first: boolean): Promise<AcquireAttempt | undefined> {
    this.attempting = true;
    try {
      return await this.caller.attempt(first);
    } catch (error) {
      // The first attempt's failure is the caller's answer; later ones are retried until its
      // deadline. The attempts carry its token, so one applied unanswered is only repeated.
      if (first || !(error instanceof LockConnectionError)) throw error;
      this.unreachable = error;
      // What the last answer said of the holder no longer bounds the wait: the backoff does, so
      // that a store that fails at once is not asked again and again.
      this.pttl = -1;
      return undefined;
    } finally {
      this.attempting = false;
    }
  }

  /** Holds the lock a release of this process gave the caller, unless it came too late. */
  private takeHandOver(): boolean {
    const grant = this.handedOver;
    if (grant === undefined) return false;
    this.handedOver = undefined;
    const late = this.caller.late(grant.validFrom);
    if (late === undefined) {
      this.finish(grant.fencingToken, grant.validFrom);
      return true;
    }
    // Answered too late to date the lock from: the caller asks (woken), which renews it if it is
    // still its own.
    this.unreachable = late;
    return false;
  }

  /** Sleeps until a wake-up, the end of the wait, or the re-check, bounded by the holder's TTL. */
  private sleep(): Promise<void> {
    const jittered = this.backoff * (0.75 + Math.random() / 2);
    const delay = this.pttl >= 0 ? Math.min(jittered, this.pttl + 1) : jittered;
    this.backoff = Math.min(2 * this.backoff, MAX_BACKOFF);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.nudge?.(), delay);
      this.nudge = () => {
        clearTimeout(timer);
        this.nudge = undefined;
        resolve();
      };
    });
  }

  private armDeadline(): void {
    const { deadline } = this.caller;
    if (deadline === Infinity) return;
    const timer = setTimeout(
      () => {
        // Timers count on the event loop's millisecond clock and can fire a little early by the
        // monotonic one; a caller must have waited its full waitTimeout.
        if (monotonicNow() < deadline) this.armDeadline();
        else this.stop(this.deadlineError());
      },
      Math.ceil(Math.max(0, deadline - monotonicNow())),
    );
    this.deadlineTimer = timer;
  }

  /**
   * What the caller fails with at its deadline: the store's silence, if that was its last word
   * (its own attempts', or its key's subscription's while none of its attempts was answered),
   * else a conflict.
   */
  private deadlineError(): unknown {
    const silence = this.unreachable ?? (this.answered ? undefined : this.room?.unreachable);
    return silence ?? this.caller.notAcquired(this.pttl);
  }

  private readonly abort = () => this.stop(this.caller.signal?.reason);

  /** The caller gives up with `error`, and leaves the store's line. */
  private stop(error: unknown): void {
    if (this.done) return;
    this.end();
    this.caller.leave();
    this.settle.reject(error);
  }

  private finish(fencingToken: number, validFrom: number): void {
    this.end();
    try {
      this.settle.resolve(this.caller.hold(fencingToken, validFrom));
    } catch (error) {
      this.settle.reject(error);
    }
  }

  private end(): void {
    this.done = true;
    clearTimeout(this.deadlineTimer);
    this.caller.signal?.removeEventListener('abort', this.abort);
    this.room?.remove(this);
    this.nudge?.();
  }
}
