import { AsyncLocalStorage } from 'node:async_hooks';
import { LockKindError, LockNotAcquiredError } from '../lock.errors.js';
import { toRedisKey } from '../keys/lock-keys.js';
import type { Lock } from '../lock.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { covers, describeKind, kindOf, kindOfToken } from '../store/lock-kind.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';
import { Tenure } from './tenure.js';

/** What running work under locks needs from the engine. */
export interface ScopeHost {
  acquire(name: string, options: ResolvedAcquireOptions): Promise<HeldLock>;
  releaseAfterWork(lock: HeldLock): Promise<void>;
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

  constructor(
    private readonly host: ScopeHost,
    private readonly keyPrefix: string,
  ) {}

  /** The lock the current work runs under (for several keys, the first in sorted order). */
  current(): Lock | undefined {
    return this.context.getStore()?.current;
  }

  /**
   * Runs `work` holding the locks on `names`: deduplicated and taken in sorted order (so that
   * two calls on the same keys cannot deadlock), reusing those that the surrounding work holds.
   * A lock taken here ends once `work` and every call that reused it (detached ones included)
   * have settled: then it is released, or, with `holdFor`, left to expire `holdFor` ms after it
   * was taken. Rejects with the `LockLostError` of a lock lost before then, unless `work` threw.
   * @param onHeld answers for the call when a lock is held by someone else, instead of throwing
   */
  async run<T>(
    names: readonly string[],
    options: ResolvedAcquireOptions,
    work: () => Promise<T> | T,
    onHeld?: (error: LockNotAcquiredError) => T,
  ): Promise<T> {
    const outer = this.context.getStore()?.locks;
    let tenures: { taken: Tenure[]; reused: Tenure[] };
    try {
      tenures = await this.enter(names, options, outer);
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

  /** Takes or joins the locks on `names` in key order; on failure, gives back what it took. */
  private async enter(
    names: readonly string[],
    options: ResolvedAcquireOptions,
    outer: Map<string, Tenure> | undefined,
  ): Promise<{ taken: Tenure[]; reused: Tenure[] }> {
    const keys =
      names.length === 1
        ? [[toRedisKey(this.keyPrefix, names[0]), names[0]] as const]
        : [...new Map(names.map((name) => [toRedisKey(this.keyPrefix, name), name]))].sort(
            ([a], [b]) => compare(a, b),
          );
    const deadline = monotonicNow() + options.waitTimeout;
    const taken: Tenure[] = [];
    const reused: Tenure[] = [];
    try {
      for (const [key, name] of keys) {
        const shared = outer?.get(key);
        if (shared) checkReuse(shared.lock, options);
        if (shared?.join()) {
          reused.push(shared);
          continue;
        }
        const waitTimeout = Math.max(0, deadline - monotonicNow());
        taken.push(new Tenure(await this.host.acquire(name, { ...options, waitTimeout })));
      }
    } catch (error) {
      for (const tenure of reused) tenure.leave();
      await Promise.all(taken.map(({ lock }) => this.host.releaseAfterWork(lock)));
      throw error;
    }
    return { taken, reused };
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
  if (!covers(heldKind, asked)) {
    throw new LockKindError(
      held.key,
      `${describeKind(heldKind)} by the surrounding work`,
      `${describeKind(asked)} inside it, which would wait for that work to end`,
    );
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
