import { LockLostError, LockShuttingDownError, messageOf } from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { LockHandle } from '../lock.js';
import type {
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from '../options/lock-options.interface.js';
import { checkTtl } from '../options/option-checks.js';
import type { LockStore } from '../store/lock-store.interface.js';
import {
  NO_TELEMETRY,
  observeAcquire,
  type LockProbe,
  type LockTelemetry,
} from '../telemetry/lock-telemetry.js';
import { Acquisition, type AcquisitionParts } from './acquisition.js';
import { driftOf, monotonicNow } from './clock.js';
import { adopt, handOff, type HandleParts } from './handles.js';
import type { HeldLock, LockOwner } from './held-lock.js';
import { InFlight } from './in-flight.js';
import { LockScopes } from './lock-scopes.js';
import { acquireAll } from './multi-held-lock.js';
import { drain, endAll, ShutdownGate } from './shutdown.js';
import { ownerMark } from './token.js';
import type { Waiter } from './waiter.js';
import { Waiters } from './waiters.js';
import { Watchdog, type LossKind } from './watchdog.js';
import { lateRenewals } from './late-renewals.js';
import { throttledWarning } from './throttled-warning.js';
import { freeAfterLoss, holdWindow, windowLeft } from './throttle-hold.js';

/**
 * The lock engine: acquisition, waiting, the watchdog, release after work and shutdown, over one
 * lock store. It knows nothing of Nest; `LockService` is its face.
 */
export class LockEngine implements LockOwner {
  readonly waiters: Waiters;
  /** Runs work under locks, reentrantly (`using`, `@WithLock`). */
  readonly scopes: LockScopes;
  private readonly watchdog: Watchdog;
  /** Where shutdown stands. */
  private readonly gate = new ShutdownGate();
  /** What every acquisition, hand-off and adoption works with. */
  private readonly parts: AcquisitionParts & HandleParts;
  private stopped?: Promise<void>;
  private storeClosed?: Promise<void>;
  /** Acquisition attempts on their way, which shutdown lets finish before it cleans up. */
  private readonly attempts = new InFlight();
  /**
   * Releases on their way: shutdown waits for them before it closes the store, or a lock whose
   * work ended would be found unreleased and its holder told it was lost.
   */
  private readonly releases = new InFlight();

  /**
   * @param warn where problems that no caller waits for are reported
   * @param telemetry where acquisitions and holds are reported (metrics and spans)
   */
  constructor(
    private readonly options: ResolvedLockOptions,
    readonly store: LockStore,
    private readonly warn: (message: string) => void,
    private readonly telemetry: LockTelemetry = NO_TELEMETRY,
  ) {
    const renewalFailed = throttledWarning(warn, 1_000);
    this.watchdog = new Watchdog(
      store,
      (lock, reason, kind) => this.onLost(lock, reason, kind),
      (error) => renewalFailed(`Lock renewal failed, will retry: ${messageOf(error)}`),
    );
    const instance = ownerMark(options.instanceId);
    this.waiters = new Waiters(store, store.capabilities.queueing, instance);
    this.scopes = new LockScopes(this);
    const { waiters, watchdog, gate, attempts } = this;
    const adopting = new Set<string>();
    this.parts = { store, waiters, watchdog, gate, attempts, owner: this, instance, adopting };
  }

  /** The lock `id`, waiting for it as the options say. @throws LockNotAcquiredError if held */
  async acquire(id: LockId, options: ResolvedAcquireOptions): Promise<HeldLock> {
    const probe = this.telemetry.startAcquire(id, options);
    if (probe === undefined) return this.start(id, options).run(true);
    return observeAcquire(probe, options, () => this.start(id, options, probe).run(true));
  }

  /** The lock `id` if it is free right now; `undefined` when it is held. */
  async tryAcquire(id: LockId, options: ResolvedAcquireOptions): Promise<HeldLock | undefined> {
    const now = { ...options, waitTimeout: 0 };
    const probe = this.telemetry.startAcquire(id, now);
    if (probe === undefined) return this.start(id, now).run(false);
    let acquisition: Acquisition | undefined;
    const run = () => (acquisition = this.start(id, now, probe)).run(false);
    return observeAcquire(probe, now, run, () => acquisition?.throttled === true);
  }

  /**
   * Takes over a lock that another process handed off (`LockService.adopt`), from now on
   * renewed by this process's watchdog and drained by its shutdown like any lock it took.
   * @throws LockLostError when the handle's lock is gone, or held here already
   */
  async adopt(id: LockId, handle: LockHandle, options: ResolvedAcquireOptions): Promise<HeldLock> {
    const probe = this.telemetry.startAcquire(id, options);
    if (probe === undefined) return adopt(this.parts, id, handle, options);
    return observeAcquire(probe, options, () => adopt(this.parts, id, handle, options, probe));
  }

  /** `Lock.handOff`: this process no longer renews, releases nor drains the lock. */
  handOffLock(lock: HeldLock): Promise<LockHandle> {
    return handOff(this.parts, lock);
  }

  /** The locks `ids`, all or none (see {@link acquireAll}). */
  acquireAll(ids: readonly LockId[], options: ResolvedAcquireOptions): Promise<HeldLock[]> {
    return acquireAll(this, ids, options);
  }

  /**
   * Deletes the lock (`Lock.release`), or with `holdFor` (unless not `keepWindow`) leaves it in
   * the store until `holdFor` ms after it was taken. Either way this process stops renewing it.
   */
  releaseLock(lock: HeldLock, keepWindow = true): Promise<boolean> {
    if (!lock.markReleased()) {
      // Nothing of ours is left in the store to release; the trace still shows how it ended.
      const { probe } = lock;
      if (probe !== undefined && lock.markReleasedAfterLoss()) {
        return probe.traceRelease(() => Promise.resolve(false));
      }
      return Promise.resolve(false);
    }
    this.watchdog.untrack(lock);
    const { probe } = lock;
    if (probe === undefined) return this.release(lock, keepWindow);
    return probe.traceRelease(() => this.release(lock, keepWindow));
  }

  /** {@link releaseLock} once the lock is marked released. */
  private async release(lock: HeldLock, keepWindow: boolean): Promise<boolean> {
    const keepFor = keepWindow ? windowLeft(lock) : 0;
    let released: boolean;
    const releasing = this.releases.track(
      keepFor > 0 ? holdWindow(this.store, lock, keepFor) : this.delete(lock),
    );
    try {
      released = await releasing;
    } catch (error) {
      // No answer: the release (or the window's hold) may still be applied, and the lock be
      // another's at once. Nobody may count on it any more (its signal aborts), and a release
      // is tried once more, so that it does not linger until its TTL (a window is left alone).
      if (this.gate.phase === 'closed') lock.markLost('the lock service shut down');
      else {
        const reason = `its release got no answer (${messageOf(error)}): the store may have let it go`;
        lock.markReleaseUnanswered(reason);
      }
      if (keepFor === 0) this.store.release(lock.key, lock.token).catch(() => undefined);
      throw error;
    }
    if (!released) lock.markLostAtRelease('it had expired or been taken before it was released');
    else lock.probe?.ended('released');
    return released;
  }

  /**
   * Releases a lock whose work has ended. Nobody will retry a release that fails here, so the
   * lock is then left to expire instead of being renewed again.
   * @param keepWindow see {@link releaseLock}
   */
  async releaseAfterWork(lock: HeldLock, keepWindow = true): Promise<void> {
    try {
      await this.releaseLock(lock, keepWindow);
    } catch (error) {
      this.watchdog.untrack(lock);
      this.warn(
        `Could not release lock "${lock.name}" (it will expire by its TTL): ${messageOf(error)}`,
      );
    }
  }

  /** `Lock.extend`. */
  async extendLock(lock: HeldLock, ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? lock.ttl : checkTtl('ttl', ttl);
    if (!lock.held) return false;
    return this.watchdog.extend(lock, newTtl);
  }

  /** How many of this process's locks are renewed late (see {@link lateRenewals}). */
  lateRenewals(): number {
    return lateRenewals(this.watchdog.held);
  }

  driftOf(ttl: number): number {
    return driftOf(ttl, this.options.driftFactor);
  }

  /**
   * Stops taking locks: refuses pending waiters and new calls, then lets the work running under
   * this process's locks finish for up to `shutdownGrace` ms, the watchdog renewing each lock
   * until its work releases it. Locks still held when the grace runs out are told they are lost
   * and released (bounded in time). The store stays open (for {@link isLocked} and the fencing
   * guard) until {@link shutdown}.
   */
  async stop(): Promise<void> {
    this.stopped ??= this.stopTakingLocks();
    await this.stopped;
  }

  /** {@link stop}s, then closes subscriptions and the connections the store owns. */
  async shutdown(): Promise<void> {
    await this.stop();
    this.storeClosed ??= this.store.close();
    await this.storeClosed;
  }

  private async stopTakingLocks(): Promise<void> {
    this.gate.phase = 'draining';
    const refusal = (waiter: Waiter) => new LockShuttingDownError(waiter.name);
    // Callers inside locked work may still need their locks to finish it: they wait on.
    const refused = this.waiters.refuse(refusal, (waiter) => waiter.insideLock === true);
    const parts = {
      store: this.store,
      waiters: this.waiters,
      watchdog: this.watchdog,
      inFlight: [this.attempts, this.releases],
    };
    const { shutdownGrace } = this.options;
    await drain(parts, shutdownGrace);
    this.gate.phase = 'closed';
    const reason =
      shutdownGrace === 0
        ? 'the lock service shut down'
        : `the lock service shut down and its grace period (shutdownGrace ${shutdownGrace} ms) ran out`;
    await endAll(parts, refusal, reason, refused);
  }

  private start(id: LockId, options: ResolvedAcquireOptions, probe?: LockProbe): Acquisition {
    const insideLock = this.scopes.holdsAny();
    if (this.gate.refuses(insideLock)) throw new LockShuttingDownError(id.name);
    return new Acquisition(this.parts, id, options, insideLock, probe);
  }

  /**
   * Deletes the lock. In fair mode it goes straight to the longest-waiting caller of this
   * process if that caller is first in the store's queue too: the release's reply, to a request
   * sent before the store gave it, dates its validity.
   */
  private async delete(lock: HeldLock): Promise<boolean> {
    const successor = this.store.capabilities.queueing
      ? this.waiters.successor(lock.key)
      : undefined;
    const sentAt = monotonicNow();
    const { released, successorFencingToken } = await this.store.release(
      lock.key,
      lock.token,
      successor,
    );
    if (
      successor !== undefined &&
      successorFencingToken !== undefined &&
      !this.waiters.handOver(lock.key, successor, successorFencingToken, sentAt) &&
      // The successor's own attempt, sent after this release, may have answered first (replies
      // to one connection can be handled out of order): then it holds the lock, and keeps it.
      !this.watchdog.holds(successor)
    ) {
      // The successor stopped waiting meanwhile: the lock goes on to the next in line.
      this.store.release(lock.key, successor).catch(() => undefined);
    }
    return released;
  }

  private onLost(lock: HeldLock, reason: string, kind: LossKind): void {
    if (!lock.markLost(reason) || kind === 'expired') return;
    this.warn(new LockLostError(lock.name, reason).message);
    // The store may still hold it for us (only the replies were late): free it for others.
    if (kind === 'timeout') freeAfterLoss(this.store, lock);
  }
}
