import { LockLostError } from '../lock.errors.js';
import type { Lock, LockHandle } from '../lock.js';
import type { LockProbe } from '../telemetry/lock-telemetry.js';
import { monotonicNow } from './clock.js';

/** What a {@link HeldLock} calls back into for the work that needs the store. */
export interface LockOwner {
  releaseLock(lock: HeldLock): Promise<boolean>;
  extendLock(lock: HeldLock, ttl?: number): Promise<boolean>;
  handOffLock(lock: HeldLock): Promise<LockHandle>;
  /** How much of a TTL the lock's validity gives up to clock drift, in ms. */
  driftOf(ttl: number): number;
}

/** A lock as its acquisition obtained it. */
export interface LockGrant {
  name: string;
  key: string;
  token: string;
  fencingToken: number;
  ttl: number;
  watchdog: boolean;
  /** Monotonic ms at which the request that proved the lock ours was sent. */
  validFrom: number;
  /** How long the store keeps it from then without a renewal, when not `ttl` (a handover's). */
  validFor?: number;
  holdFor?: number;
  /** What telemetry follows the lock by, when it records anything. */
  probe?: LockProbe;
}

/** The library's lock handle, with the bookkeeping that the watchdog needs. */
export class HeldLock implements Lock {
  /** Created when somebody asks for the signal or the lock is lost, not for every lock. */
  private controller?: AbortController;
  private state: 'held' | 'released' | 'lost' | 'handed-off' = 'held';
  /** Monotonic ms until which the lock is certainly ours, unless renewed. */
  validUntil = 0;
  /** Monotonic ms at which the watchdog wants to renew it. */
  renewAt = 0;
  /** A renewal is on its way to the store. */
  renewing = false;
  /** Monotonic ms of the watchdog's queue entry that counts for it (NaN: none). */
  dueAt = NaN;
  /** Monotonic ms at which the acquiring request was sent. */
  readonly acquiredAt: number;
  private confirmedAt = -Infinity;
  /** Whether its owner called release once it was lost, which the trace shows once. */
  private releasedAfterLoss = false;

  /** The key as the caller named it. */
  readonly name: string;
  readonly key: string;
  readonly token: string;
  readonly fencingToken: number;
  /** The TTL that renewals ask for. */
  ttl: number;
  readonly watchdog: boolean;
  /** Throttle mode: the lock is left to end this many ms after it was taken, not deleted. */
  readonly holdFor?: number;
  /** Told when the hold ends (see {@link LockGrant.probe}). */
  readonly probe?: LockProbe;

  /** @param grant what the caller was granted, valid from the monotonic ms `validFrom` */
  constructor(
    private readonly owner: LockOwner,
    grant: LockGrant,
  ) {
    this.name = grant.name;
    this.key = grant.key;
    this.token = grant.token;
    this.fencingToken = grant.fencingToken;
    this.ttl = grant.ttl;
    this.watchdog = grant.watchdog;
    this.holdFor = grant.holdFor;
    this.probe = grant.probe;
    this.acquiredAt = grant.validFrom;
    this.confirmed(grant.validFrom, grant.validFor ?? grant.ttl);
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  /** Whether the lock is known lost (its signal, if created, is aborted). */
  get lost(): boolean {
    return this.state === 'lost';
  }

  get held(): boolean {
    return this.state === 'held';
  }

  release(): Promise<boolean> {
    return this.owner.releaseLock(this);
  }

  extend(ttl?: number): Promise<boolean> {
    return this.owner.extendLock(this, ttl);
  }

  handOff(): Promise<LockHandle> {
    return this.owner.handOffLock(this);
  }

  throwIfLost(): void {
    if (this.controller?.signal.aborted) throw this.controller.signal.reason;
    if (this.state !== 'held') {
      const ended = { lost: 'lost', released: 'released', 'handed-off': 'handed off' };
      throw new LockLostError(this.name, `it was ${ended[this.state]}`);
    }
    const now = monotonicNow();
    if (now >= this.validUntil) {
      const late = Math.round(now - this.validUntil);
      throw new LockLostError(
        this.name,
        `its validity ended ${late} ms ago with no renewal confirmed (the process may have ` +
          'been paused, or the store slow to answer): it may be another holder’s by now',
      );
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /**
   * The store confirmed the lock with `ttl` for a request sent at monotonic time `sentAt`. The
   * store applies one connection's requests in the order they were sent, so a confirmation of
   * an earlier request than the last one confirmed says nothing new.
   */
  confirmed(sentAt: number, ttl: number): void {
    if (sentAt < this.confirmedAt) return;
    this.confirmedAt = sentAt;
    this.validUntil = sentAt + ttl - this.owner.driftOf(ttl);
    this.renewAt = sentAt + Math.floor(ttl / 3);
  }

  /**
   * A request sent at `sentAt` that asked for `ttl` got no answer and may have been applied: the
   * lock is certainly ours only until the sooner of its current end and the one it asked for.
   * Nor can an answer that comes later to a request sent before it say more, as the store may
   * have applied this one after it.
   */
  mayHaveApplied(sentAt: number, ttl: number): void {
    this.validUntil = Math.min(this.validUntil, sentAt + ttl - this.owner.driftOf(ttl));
    this.confirmedAt = Math.max(this.confirmedAt, sentAt);
    // Renewed as a lock of that TTL would be, not at the later moment the longer one set.
    this.renewAt = Math.min(this.renewAt, sentAt + Math.floor(ttl / 3));
  }

  /**
   * A request that sets the lock's TTL to `ttl` is sent at `sentAt` (`extend`). The store may
   * apply it well before its answer comes back, and a shorter TTL then ends the lock sooner
   * than its last confirmation said: until the answer, the lock counts as valid only until the
   * sooner of the two ends. A TTL shorter than the lock's also ends what the answers to earlier
   * requests (a renewal on its way, with the longer TTL) can say: the store applies this one
   * after them. `true` when that moved its end earlier.
   */
  asking(sentAt: number, ttl: number): boolean {
    const shorter = ttl < this.ttl;
    this.ttl = ttl;
    const before = this.validUntil;
    if (shorter || sentAt + ttl - this.owner.driftOf(ttl) < before)
      this.mayHaveApplied(sentAt, ttl);
    return this.validUntil < before;
  }

  /** Marks the lock released by its owner; `false` if it had already ended. */
  markReleased(): boolean {
    if (this.state !== 'held') return false;
    this.state = 'released';
    return true;
  }

  /**
   * Its owner releases a lock that was lost meanwhile (the work under `using` ends after the
   * loss): `true` the first time only, for the release span that tells the trace the hold ended
   * lost.
   */
  markReleasedAfterLoss(): boolean {
    if (this.state !== 'lost' || this.releasedAfterLoss) return false;
    this.releasedAfterLoss = true;
    return true;
  }

  /**
   * The owner's release got no answer: the store may have applied it, and the lock be another's
   * already. The lock stays ended as released (its work is over, not lost), and its signal
   * tells whatever still looks at it that it protects nothing any more.
   */
  markReleaseUnanswered(reason: string): void {
    if (this.state !== 'released') return;
    this.probe?.ended('released');
    this.controller ??= new AbortController();
    this.controller.abort(new LockLostError(this.name, reason));
  }

  /**
   * Its owner's release found the lock gone: lost, and that release's span says so, so that a
   * later release makes no second one.
   */
  markLostAtRelease(reason: string): void {
    this.markLost(reason);
    this.releasedAfterLoss = true;
  }

  /** Marks the lock lost and aborts its signal; `false` if it had already ended. */
  markLost(reason: string): boolean {
    if (this.state === 'lost') return false;
    this.state = 'lost';
    this.probe?.ended('lost');
    this.controller ??= new AbortController();
    this.controller.abort(new LockLostError(this.name, reason));
    return true;
  }

  /**
   * Marks the lock handed to another process: its hold here ends as a release would end it,
   * and its signal tells the work that still runs here that the lock no longer protects it.
   * `false` if it had already ended.
   */
  markHandedOff(): boolean {
    if (this.state !== 'held') return false;
    this.state = 'handed-off';
    this.probe?.ended('released');
    this.controller ??= new AbortController();
    this.controller.abort(
      new LockLostError(this.name, 'it was handed off (handOff) to be adopted by another process'),
    );
    return true;
  }

  /** The lock as plain JSON for `LockService.adopt`, token included (unlike {@link toJSON}). */
  handle(): LockHandle {
    const { name, key, token, fencingToken, ttl } = this;
    return { name, key, token, fencingToken, ttl };
  }

  /** Keeps the token out of logs and error reports that print the object. */
  toJSON(): object {
    return { key: this.key, fencingToken: this.fencingToken, state: this.state };
  }
}

/**
 * Why a lock ended whose renewal found its token gone from the store. An answer read after the
 * lock's validity ran out (a starved event loop can run it ahead of the validity timer) says
 * so: the lock ended then, and may have been another holder's since.
 */
export function goneReason(lock: HeldLock): string {
  return monotonicNow() >= lock.validUntil
    ? 'its validity ran out before a renewal was confirmed, and its token is gone from the store'
    : 'its token was gone or replaced in the store';
}
