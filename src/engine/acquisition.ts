import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
} from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { kindOf } from '../store/lock-kind.js';
import type { AcquireAttempt, LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import { HeldLock, type LockOwner } from './held-lock.js';
import type { InFlight } from './in-flight.js';
import type { LockProbe } from '../telemetry/lock-telemetry.js';
import type { ShutdownGate } from './shutdown.js';
import { throttleTag } from '../store/throttle-window.js';
import { newToken } from './token.js';
import type { Waiters } from './waiters.js';
import { Wait, type WaitingCaller } from './wait.js';
import type { Watchdog } from './watchdog.js';

/** The parts an acquisition works with, which the engine composes. */
export interface AcquisitionParts {
  readonly store: LockStore;
  readonly waiters: Waiters;
  /** Keeps the locks it grants alive; knows whether a token is held here. */
  readonly watchdog: Watchdog;
  readonly gate: ShutdownGate;
  /** Attempts on their way, which shutdown lets finish before it cleans up. */
  readonly attempts: InFlight;
  /** Whom the locks it grants call back to be released or extended. */
  readonly owner: LockOwner;
  /** What ends its tokens: the instance that holds, as `inspect()` reads it (see `ownerMark`). */
  readonly instance: string;
}

/**
 * One caller's way to a lock: a first attempt, then, if the lock is held and the caller may
 * wait, a {@link Wait} until an attempt succeeds (or a release of this process hands the lock
 * over), the wait runs out, or the caller's signal abandons it.
 */
export class Acquisition implements WaitingCaller {
  /** Tagged with the kind of lock asked for, which the store reads from it. */
  readonly token: string;
  readonly deadline: number;
  /** The key as the caller named it, and its full key in the store. */
  readonly name: string;
  readonly key: string;
  readonly queueing: boolean;
  readonly signal?: AbortSignal;
  private readonly startedAt = monotonicNow();
  /** The caller's wait, once it waits: what an attempt of its took is still its own meanwhile. */
  private wait?: Wait;
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
    this.queueing = parts.store.capabilities.queueing && options.waitTimeout > 0;
    this.signal = options.signal;
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
    const { store, gate, waiters } = this.parts;
    if (waitTimeout === 0 && store.reachable === false && !gate.refuses(this.insideLock)) {
      // An answer would only come after a reconnect, or never: a caller that may not wait
      // learns it now, not after commandTimeout. One that may wait keeps trying until its
      // deadline (an outage is not a verdict).
      throw new LockConnectionError(this.name, 'the lock store is not connected');
    }
    // Where callers of this process wait for the key already, the caller waits with them from
    // its first attempt on, so that a wake-up for it is not missed while that attempt is out.
    if (waitTimeout > 0 && waiters.listening(this.key)) return this.waitFor();
    const sentAt = monotonicNow();
    const answer = await this.firstAttempt();
    if (signal?.aborted) {
      // Abandoned during the attempt: give back whatever it took (the lock, a place in line).
      await this.parts.store.release(this.key, this.token).catch(() => undefined);
      throw signal.reason;
    }
    if (waitTimeout > 0) {
      // A grant answered after its validity ran out (the store paused) is no verdict for a
      // caller that may wait: it asks again, as a waiter does.
      if (answer.acquired && this.late(sentAt) === undefined) {
        return this.hold(answer.fencingToken, sentAt);
      }
      return this.waitFor({ answer, sentAt });
    }
    if (answer.acquired) return this.hold(answer.fencingToken, sentAt);
    this.throttled = answer.windowLeft !== undefined;
    if (!throwIfHeld) return undefined;
    throw this.notAcquired(answer.pttl, answer.windowLeft, 0);
  }

  private waitFor(answered?: { answer: AcquireAttempt; sentAt: number }): Promise<HeldLock> {
    this.wait = new Wait(this, this.parts.waiters);
    return this.wait.run(answered);
  }

  /** One atomic attempt, which shutdown lets finish before it closes the store. */
  attempt(first: boolean): Promise<AcquireAttempt> {
    if (first) return this.firstAttempt();
    const sent = this.probe ? this.probe.within(() => this.send()) : this.send();
    return this.parts.attempts.track(sent);
  }

  private send(): Promise<AcquireAttempt> {
    // An attempt that timed out and is applied later took what the caller's next attempt will
    // find its own: it is given back only if the caller neither holds the lock nor waits on.
    const reply = this.parts.store.acquire(
      this.key,
      this.token,
      this.options.ttl,
      this.queueing,
      () => this.wait?.waiting === true || this.parts.watchdog.holds(this.token),
    );
    return reply.then((result) => {
      this.parts.waiters.windows.saw(this.key, result.acquired ? undefined : result.windowLeft);
      return result;
    });
  }

  /**
   * The first attempt, which shutdown lets finish: what it took is given back, and the caller
   * refused, if shutdown began meanwhile.
   */
  private firstAttempt(): Promise<AcquireAttempt> {
    const { store, gate, attempts } = this.parts;
    const sent = this.probe ? this.probe.within(() => this.send()) : this.send();
    const running = sent.then((result) => {
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
  hold(fencingToken: number, validFrom: number, validFor = this.options.ttl): HeldLock {
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

  refused(): boolean {
    return this.parts.gate.refuses(this.insideLock);
  }

  waiting(): void {
    this.probe?.waiting();
  }

  /**
   * Leaves the store's queue, where the first attempt may have put the caller; a lock reserved
   * for it meanwhile goes on to the next in line.
   */
  leave(): void {
    this.parts.store.release(this.key, this.token).catch(() => undefined);
  }

  /**
   * The lock was held all the time the caller waited: a throttle's refusal if the holder is a
   * throttle whose window the store reported open (`windowLeft`; for a caller that waited, as
   * the key's last refusal here saw it), whatever the caller's options; else a plain conflict.
   */
  notAcquired(
    pttl: number,
    windowLeft = this.parts.waiters.windows.left(this.key),
    waitedMs?: number,
  ): LockNotAcquiredError {
    const waited = waitedMs ?? monotonicNow() - this.startedAt;
    const holderTtlMs = pttl >= 0 ? pttl : undefined;
    return windowLeft === undefined
      ? new LockNotAcquiredError(this.name, waited, holderTtlMs)
      : new LockNotAcquiredError(this.name, waited, holderTtlMs, true, windowLeft);
  }
}
