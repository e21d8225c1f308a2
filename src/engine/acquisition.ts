import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
} from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { kindOf } from '../store/lock-kind.js';
import {
  HANDOVER_LEASE,
  type AcquireAttempt,
  type LockStore,
} from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import { HeldLock, type LockOwner } from './held-lock.js';
import type { InFlight } from './in-flight.js';
import type { LockProbe } from '../telemetry/lock-telemetry.js';
import type { ShutdownGate } from './shutdown.js';
import { throttleTag } from '../store/throttle-window.js';
import { newToken } from './token.js';
import type { Waiter, Waiters } from './waiters.js';
import type { Watchdog } from './watchdog.js';

/** The parts an acquisition works with, which the engine composes. */
export interface AcquisitionParts {
  readonly store: LockStore;
  readonly waiters: Waiters;
  /** Keeps the locks it grants alive; knows whether a token is held here. */
  readonly watchdog: Watchdog;
  readonly gate: ShutdownGate;
  /** First attempts on their way, which shutdown lets finish before it cleans up. */
  readonly attempts: InFlight;
  /** Whom the locks it grants call back to be released or extended. */
  readonly owner: LockOwner;
  /** What ends its tokens: the instance that holds, as `inspect()` reads it (see `ownerMark`). */
  readonly instance: string;
}

/**
 * One caller's way to a lock: a first attempt, then, if the lock is held and the caller may
 * wait, a place in the waiting room until an attempt succeeds (or a release of this process
 * hands the lock over), the wait runs out, or the caller's signal abandons it.
 */
export class Acquisition implements Waiter {
  /** Tagged with the kind of lock asked for, which the store reads from it. */
  readonly token: string;
  readonly deadline: number;
  /** The key as the caller named it, and its full key in the store. */
  readonly name: string;
  readonly key: string;
  private readonly startedAt = monotonicNow();
  private settle?: { resolve: (lock: HeldLock) => void; reject: (error: unknown) => void };
  /** In the waiting room: what an attempt of its took in the store is still the caller's. */
  private waiting = false;
  /** Its last attempt that queued it: when it was sent, and the `lastFence` of its answer. */
  private refused?: { sentAt: number; lastFence: number };
  /** A caller that may not wait was refused by a throttle whose window is open. */
  throttled = false;

  constructor(
    private readonly parts: AcquisitionParts,
    id: LockId,
    readonly options: ResolvedAcquireOptions,
    /**
     * The caller runs inside work that holds a lock: work that shutdown lets finish, so it may
     * still take the locks it needs until the grace period ends.
     */
    readonly insideLock = false,
    /** Told how the acquisition goes, when telemetry records anything. */
    private readonly probe?: LockProbe,
  ) {
    ({ name: this.name, key: this.key } = id);
    this.deadline = this.startedAt + options.waitTimeout;
    this.token = newToken(kindOf(options).tag + throttleTag(options.holdFor), parts.instance);
  }

  /**
   * The lock, or `undefined` when it is held and the caller does not wait (`tryAcquire`).
   * @throws LockNotAcquiredError when the caller waited (or may not wait, and `throwIfHeld`)
   */
  run(throwIfHeld: true): Promise<HeldLock>;
  run(throwIfHeld: false): Promise<HeldLock | undefined>;
  async run(throwIfHeld: boolean): Promise<HeldLock | undefined> {
    const { signal, waitTimeout } = this.options;
    signal?.throwIfAborted();
    // Without a queue in the store, a new caller behind callers of this process that already
    // wait for the key queues up here instead of trying first: otherwise a holder that releases
    // and asks again wins every time. With one, its first attempt takes its place in the
    // store's line, which every process shares, and the store keeps that order.
    const { store, gate } = this.parts;
    if (waitTimeout === 0 && store.reachable === false && !gate.refuses(this.insideLock)) {
      // An answer would only come after a reconnect, or never: a caller that may not wait
      // learns it now, not after commandTimeout. One that may wait keeps trying until its
      // deadline (an outage is not a verdict).
      throw new LockConnectionError(this.name, 'the lock store is not connected');
    }
    const heard = this.parts.waiters.heard(this.key);
    const sentAt = monotonicNow();
    const first: AcquireAttempt =
      waitTimeout > 0 && !this.parts.store.capabilities.queueing && this.parts.waiters.has(this.key)
        ? { acquired: false, pttl: -1 }
        : await this.firstAttempt();
    if (signal?.aborted) {
      // Abandoned during the attempt: give back whatever it took (the lock, a queue place).
      await this.parts.store.release(this.key, this.token).catch(() => undefined);
      throw signal.reason;
    }
    // A grant answered after its validity ran out (the store paused) is no verdict for a
    // caller that may wait: it asks again from its place in line, as a waiter does.
    const late = first.acquired && waitTimeout > 0 ? this.late(sentAt) : undefined;
    if (first.acquired && late === undefined) return this.hold(first.fencingToken, sentAt);
    const pttl = first.acquired ? -1 : first.pttl;
    if (waitTimeout === 0) {
      const windowLeft = first.acquired ? undefined : first.windowLeft;
      this.throttled = windowLeft !== undefined;
      if (!throwIfHeld) return undefined;
      throw this.notAcquired(pttl, windowLeft, 0);
    }
    if (this.parts.gate.refuses(this.insideLock)) {
      this.leave();
      throw new LockShuttingDownError(this.name);
    }
    return new Promise<HeldLock>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.waiting = true;
      this.probe?.waiting();
      signal?.addEventListener('abort', this.abandon, { once: true });
      this.parts.waiters.wait(this.key, this, pttl, late ? undefined : heard, late);
    });
  }

  /** One atomic attempt; in fair mode a refused one takes or keeps the caller's place in line. */
  attempt(): Promise<AcquireAttempt> {
    if (this.probe !== undefined) return this.probe.within(() => this.send());
    return this.send();
  }

  private send(): Promise<AcquireAttempt> {
    const queue = this.parts.store.capabilities.queueing && this.options.waitTimeout > 0;
    const sentAt = monotonicNow();
    // An attempt that timed out and is applied later took what the caller's next attempt will
    // find its own: it is given back only if the caller neither holds the lock nor waits on.
    const reply = this.parts.store.acquire(
      this.key,
      this.token,
      this.options.ttl,
      queue,
      () => this.waiting || this.parts.watchdog.holds(this.token),
    );
    return reply.then((result) => this.noteAnswer(result, sentAt));
  }

  /** Notes the window of a refusal for the key's waiters, and the `lastFence` of a queued one. */
  private noteAnswer(result: AcquireAttempt, sentAt: number): AcquireAttempt {
    this.parts.waiters.windows.saw(this.key, result.acquired ? undefined : result.windowLeft);
    if (!result.acquired && result.lastFence !== undefined) {
      if (sentAt >= (this.refused?.sentAt ?? -Infinity)) {
        this.refused = { sentAt, lastFence: result.lastFence };
      }
    }
    return result;
  }

  /**
   * A grant announced with `fencingToken` came after the caller's last refused attempt ran if
   * that attempt's `lastFence` is below it (fencing tokens only grow): the store then keeps the
   * lock the caller's for the handover lease (at most its TTL) from a moment after that attempt
   * was sent. Only a lock that its watchdog renews starts on so short a validity, and only with
   * half of it left; otherwise the caller's next attempt takes the lock, with its whole TTL.
   */
  noticeGrant(fencingToken: number): { validFrom: number; validFor: number } | undefined {
    const { ttl, watchdog, holdFor } = this.options;
    const { refused } = this;
    if (!watchdog || holdFor !== undefined) return undefined;
    if (refused === undefined || fencingToken <= refused.lastFence) return undefined;
    const validFor = Math.min(ttl, HANDOVER_LEASE);
    const left = refused.sentAt + validFor - this.parts.owner.driftOf(validFor) - monotonicNow();
    return left >= validFor / 2 ? { validFrom: refused.sentAt, validFor } : undefined;
  }

  /**
   * The first attempt, which shutdown lets finish: what it took is given back, and the caller
   * refused, if shutdown began meanwhile.
   */
  private firstAttempt(): Promise<AcquireAttempt> {
    const { store, gate, attempts } = this.parts;
    const running = this.attempt().then((result) => {
      if (!gate.refuses(this.insideLock)) return result;
      return store
        .release(this.key, this.token)
        .then(undefined, () => undefined)
        .then(() => Promise.reject(new LockShuttingDownError(this.name)));
    });
    return attempts.track(running);
  }

  /**
   * Makes the caller a holder of a lock valid from `validFrom`. A lock granted once shutdown
   * refuses the caller, or whose validity ran out before its answer came (a stall, or a WAIT
   * for replicas, that outlasted the TTL) and may already be someone else's, is given back
   * instead of starting work that nothing protects.
   * @throws LockShuttingDownError, LockConnectionError
   */
  private hold(fencingToken: number, validFrom: number, validFor = this.options.ttl): HeldLock {
    const { store, watchdog, gate, owner } = this.parts;
    const refusal = gate.refuses(this.insideLock)
      ? new LockShuttingDownError(this.name)
      : this.late(validFrom, validFor);
    if (refusal) {
      store.release(this.key, this.token).catch(() => undefined);
      throw refusal;
    }
    const { name, key, token, probe } = this;
    const { ttl, watchdog: renewed, holdFor } = this.options;
    const grant = {
      name,
      key,
      token,
      fencingToken,
      ttl,
      watchdog: renewed,
      validFrom,
      validFor,
      holdFor,
      probe,
    };
    const lock = new HeldLock(owner, grant);
    watchdog.track(lock);
    return lock;
  }

  late(validFrom: number, validFor = this.options.ttl): LockConnectionError | undefined {
    if (validFrom + validFor - this.parts.owner.driftOf(validFor) > monotonicNow()) return;
    const validity = validFor === this.options.ttl ? `ttl ${validFor}` : validFor;
    return new LockConnectionError(
      this.name,
      `the lock was granted, but its validity (${validity} ms) ran out before the answer came`,
    );
  }

  acquired(fencingToken: number, validFrom: number, validFor?: number): void {
    this.waiting = false;
    this.stopListening();
    try {
      this.settle?.resolve(this.hold(fencingToken, validFrom, validFor));
    } catch (error) {
      this.settle?.reject(error);
    }
  }

  failed(error: unknown): void {
    this.waiting = false;
    this.stopListening();
    this.leave();
    this.settle?.reject(error);
  }

  timedOut(pttl: number): void {
    this.waiting = false;
    this.stopListening();
    this.leave();
    this.settle?.reject(this.notAcquired(pttl, this.parts.waiters.windows.left(this.key)));
  }

  abandoned(): void {
    this.leave();
  }

  private readonly abandon = () =>
    this.parts.waiters.cancel(this.key, this, () => {
      this.waiting = false;
      this.leave();
      this.settle?.reject(this.options.signal?.reason);
    });

  private stopListening(): void {
    this.options.signal?.removeEventListener('abort', this.abandon);
  }

  /**
   * Leaves the store's queue, where the first attempt may have put the caller; a lock reserved
   * for it meanwhile goes on to the next in line.
   */
  private leave(): void {
    this.parts.store.release(this.key, this.token).catch(() => undefined);
  }

  /**
   * The lock was held all the time the caller waited: a throttle's refusal if the holder is a
   * throttle whose window the store reported open (`windowLeft`; for a caller that waited, as
   * the key's last refusal here saw it), whatever the caller's options; else a plain conflict.
   */
  private notAcquired(pttl: number, windowLeft?: number, waitedMs?: number): LockNotAcquiredError {
    const waited = waitedMs ?? monotonicNow() - this.startedAt;
    const holderTtlMs = pttl >= 0 ? pttl : undefined;
    return windowLeft === undefined
      ? new LockNotAcquiredError(this.name, waited, holderTtlMs)
      : new LockNotAcquiredError(this.name, waited, holderTtlMs, true, windowLeft);
  }
}
