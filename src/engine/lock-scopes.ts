import { AsyncLocalStorage } from 'node:async_hooks';
import { LockKindError, LockNotAcquiredError } from '../lock.errors.js';
import { inKeyOrder, type LockId } from '../keys/lock-keys.js';
import type { Lock } from '../lock.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { kindOf, kindOfToken } from '../store/lock-kind.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';
import { refreshStale, type GiveBack } from './multi-held-lock.js';
import { Tenure } from './tenure.js';

/** What running work under locks needs from the engine. */
export interface ScopeHost extends GiveBack {
  acquire(id: LockId, options: ResolvedAcquireOptions): Promise<HeldLock>;
  /** @param keepWindow with `holdFor`, leave the lock to the end of its window (the default) */
  releaseAfterWork(lock: HeldLock, keepWindow?: boolean): Promise<void>;
}

/** The locks that the work running in one async call chain holds. */
interface Scope {
  current: Lock;
  locks: Map<string, Tenure>;
}

/**
 * Work run under locks (`using`, `@WithLock`), with reentrancy: the locks the surrounding work
 * holds, in the same async call chain, are reused instead of waited for.
 */
export class LockScopes {
  private readonly context = new AsyncLocalStorage<Scope>();

  constructor(private readonly host: ScopeHost) {}

  /** The lock the current work runs under (for several keys, the first in sorted order). */
  current(): Lock | undefined {
    return this.context.getStore()?.current;
  }

  /** The locks on `ids` that the current work runs under, in the order given. */
  currentLocks(ids: readonly LockId[]): Lock[] {
    const locks = this.context.getStore()?.locks;
    return ids.flatMap((id) => locks?.get(id.key)?.lock ?? []);
  }

  /** Whether the current work holds a lock (one it took, or reuses, that is still held). */
  holdsAny(): boolean {
    const scope = this.context.getStore();
    if (!scope) return false;
    for (const { lock } of scope.locks.values()) if (lock.held) return true;
    return false;
  }

  /**
   * Runs `work` holding the locks `ids`: deduplicated and taken in sorted order (so that
   * two calls on the same keys cannot deadlock), reusing those that the surrounding work holds.
   * A lock taken here ends once `work` and every call that reused it (detached ones included)
   * have settled: then it is released, or, with `holdFor`, left to expire `holdFor` ms after it
   * was taken. Rejects with the `LockLostError` of a lock lost before then, unless `work` threw.
   * @param onHeld answers for the call when a lock is held by someone else, instead of throwing
   */
  async run<T>(
    ids: readonly LockId[],
    options: ResolvedAcquireOptions,
    work: () => Promise<T> | T,
    onHeld?: (error: LockNotAcquiredError) => T,
  ): Promise<T> {
    const outer = this.context.getStore()?.locks;
    let tenures: { taken: Tenure[]; reused: Tenure[] };
    try {
      tenures = await this.enter(ids, options, outer);
    } catch (error) {
      if (onHeld && error instanceof LockNotAcquiredError) return onHeld(error);
      throw error;
    }
    const { taken, reused } = tenures;
    // Each list is in key order already: only a mix of both needs sorting.
    const all =
      reused.length === 0
        ? taken
        : taken.length === 0
          ? reused
          : [...taken, ...reused].sort((a, b) => compare(a.lock.key, b.lock.key));
    const locks = new Map(outer);
    for (const tenure of all) locks.set(tenure.lock.key, tenure);
    const scope: Scope = { current: all[0].lock, locks };
    const end = () => {
      for (const tenure of reused) tenure.leave();
      return Promise.all(
        taken.map((tenure) => tenure.end(() => this.host.releaseAfterWork(tenure.lock))),
      );
    };
    let result: T;
    try {
      const lost = all.find(({ lock }) => !lock.held);
      if (lost) throw lost.lock.signal.reason;
      result = await this.context.run(scope, work);
    } catch (error) {
      await end();
      throw error;
    }
    await end();
    const lost = all.find(({ lock }) => lock.lost);
    if (lost) throw lost.lock.signal.reason;
    return result;
  }

  /** Takes or joins the locks `locks` in key order; on failure, gives back what it took. */
  private async enter(
    locks: readonly LockId[],
    options: ResolvedAcquireOptions,
    outer: Map<string, Tenure> | undefined,
  ): Promise<{ taken: Tenure[]; reused: Tenure[] }> {
    const ids = inKeyOrder(locks);
    const deadline = monotonicNow() + options.waitTimeout;
    const take = (id: LockId) =>
      this.host.acquire(id, { ...options, waitTimeout: Math.max(0, deadline - monotonicNow()) });
    const taken: HeldLock[] = [];
    const takenIds: LockId[] = [];
    const reused: Tenure[] = [];
    try {
      for (const id of ids) {
        const shared = outer?.get(id.key);
        if (shared) checkReuse(shared.lock, options);
        if (shared?.join()) {
          reused.push(shared);
          continue;
        }
        taken.push(await take(id));
        takenIds.push(id);
      }
      await refreshStale(taken, takenIds, take, this.host, deadline);
    } catch (error) {
      for (const tenure of reused) tenure.leave();
      // No work ran under them: a throttle's window does not close for nothing.
      await Promise.all(taken.map((lock) => this.host.releaseAfterWork(lock, false)));
      throw error;
    }
    return { taken: taken.map((lock) => new Tenure(lock)), reused };
  }
}

/**
 * Nested work asks for a key that the surrounding work holds: it reuses the hold if the hold
 * covers what it asks for (see `covers`).
 * @throws LockKindError for an upgrade, which would wait for the surrounding work to end
 */
function checkReuse(held: HeldLock, options: ResolvedAcquireOptions): void {
  const heldKind = kindOfToken(held.token);
  const asked = kindOf(options);
  if (!heldKind.covers(asked)) {
    throw new LockKindError(
      held.name,
      `${heldKind.description} by the surrounding work`,
      `${asked.description} inside it, which would wait for that work to end`,
    );
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
