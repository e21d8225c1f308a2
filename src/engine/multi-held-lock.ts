import { LockConnectionError, LockOptionsError } from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { Lock, LockHandle, MultiLock } from '../lock.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';
import type { LockEngine } from './lock-engine.js';

/** The handle of a lock on several keys (see {@link MultiLock}). */
export class MultiHeldLock implements MultiLock {
  /** Made when somebody asks for it, not for every lock. */
  private combined?: AbortSignal;

  /** @param locks one per key, in the order of their full keys (at least one) */
  constructor(readonly locks: readonly Lock[]) {}

  get key(): string {
    return this.locks[0].key;
  }

  get token(): string {
    return this.locks[0].token;
  }

  get fencingToken(): number {
    return this.locks[0].fencingToken;
  }

  get signal(): AbortSignal {
    this.combined ??= AbortSignal.any(this.locks.map((lock) => lock.signal));
    return this.combined;
  }

  /** Releases every lock, even when one fails; rejects with the first failure, if any. */
  release(): Promise<boolean> {
    return every(this.locks.map((lock) => lock.release()));
  }

  extend(ttl?: number): Promise<boolean> {
    return every(this.locks.map((lock) => lock.extend(ttl)));
  }

  /** Refused: a handle carries one lock; hand off each of {@link locks} instead. */
  handOff(): Promise<LockHandle> {
    return Promise.reject(
      new LockOptionsError(
        'handOff',
        this.key,
        'one lock: hand off each of the `locks` of several',
      ),
    );
  }

  /** Throws the first lost lock's `LockLostError`, if any lock no longer protects the work. */
  throwIfLost(): void {
    for (const lock of this.locks) lock.throwIfLost();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Keeps the tokens out of logs and error reports that print the object. */
  toJSON(): object {
    return { keys: this.locks.map((lock) => lock.key), locks: this.locks };
  }
}

/** Whether every call answered `true`, once all have settled. */
async function every(calls: Promise<boolean>[]): Promise<boolean> {
  const outcomes = await Promise.allSettled(calls);
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.every((outcome) => outcome.status === 'fulfilled' && outcome.value);
}

/**
 * The locks `ids` (in key order, see `lockIdsOf`), all or none: taken one after the other
 * within one `waitTimeout`. When one cannot be had, those taken are given back, deleted even
 * with `holdFor`, since no work ran under them.
 * @throws LockNotAcquiredError naming the key that stayed held
 */
export async function acquireAll(
  engine: LockEngine,
  ids: readonly LockId[],
  options: ResolvedAcquireOptions,
): Promise<HeldLock[]> {
  const deadline = monotonicNow() + options.waitTimeout;
  const taken: HeldLock[] = [];
  const take = (id: LockId) =>
    engine.acquire(id, { ...options, waitTimeout: Math.max(0, deadline - monotonicNow()) });
  try {
    for (const id of ids) taken.push(await take(id));
    await refreshStale(taken, ids, take, engine, deadline);
  } catch (error) {
    await Promise.all(taken.map((lock) => engine.releaseAfterWork(lock, false)));
    throw error;
  }
  return taken;
}

/** How many times the keys from a stale one on are given back and taken again, at most. */
const REFRESH_ROUNDS = 3;

/** What giving locks back needs from the engine. */
export interface GiveBack {
  readonly store: Pick<LockStore, 'release'>;
  releaseAfterWork(lock: HeldLock, keepWindow?: boolean): Promise<void>;
}

/**
 * Taking the later keys may have outlasted an earlier one's validity (a slow answer, a pause),
 * and that one may be another's by now: as a single caller whose grant came too late, it is
 * given back and asked for again. So is every key after it, and they are all taken again in
 * key order: holding a later key while asking again for an earlier one could wait in a cycle
 * with a caller that took the earlier one meanwhile. `locks[i]` holds `ids[i]` (in key order)
 * and `locks` changes in place: what is in it when this throws is still held.
 * @throws LockConnectionError naming the stale key when the deadline has passed, or after
 *   {@link REFRESH_ROUNDS} rounds (answers too slow for the TTL to cover all the keys)
 */
export async function refreshStale(
  locks: HeldLock[],
  ids: readonly LockId[],
  take: (id: LockId) => Promise<HeldLock>,
  host: GiveBack,
  deadline: number,
): Promise<void> {
  for (let round = 1, stale = staleIn(locks); stale >= 0; round++, stale = staleIn(locks)) {
    const back = locks.splice(stale);
    await Promise.all(back.map((lock) => giveBack(host, lock)));
    if (round > REFRESH_ROUNDS || monotonicNow() >= deadline) {
      throw new LockConnectionError(
        back[0].name,
        'its validity ran out while the other keys were taken, and no time is left to take ' +
          'them all again',
      );
    }
    for (const id of ids.slice(stale)) locks.push(await take(id));
  }
}

/**
 * Gives back a lock that no work ran under. A lost one is released in the store all the same:
 * a throttle lost to unanswered renewals is kept there to the end of its window, which would
 * refuse its own caller's next attempt.
 */
async function giveBack(host: GiveBack, lock: HeldLock): Promise<void> {
  if (lock.held) await host.releaseAfterWork(lock, false);
  else await host.store.release(lock.key, lock.token).catch(() => undefined);
}

/** The index of the first lock that is lost or whose validity has run out; -1 if none. */
function staleIn(locks: readonly HeldLock[]): number {
  const now = monotonicNow();
  return locks.findIndex((lock) => !lock.held || now >= lock.validUntil);
}
