import { MIN_TTL } from '../lock.constants.js';
import { LockConnectionError } from '../lock.errors.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';

/**
 * How long a throttle (`holdFor`) must stay in the store for its window to end `holdFor` ms
 * after the lock was taken (counted from when the request that granted it was sent); 0 when
 * the lock is no throttle, or its window has (all but) passed.
 */
export function windowLeft(lock: HeldLock): number {
  if (lock.holdFor === undefined) return 0;
  const left = Math.ceil(lock.acquiredAt + lock.holdFor - monotonicNow());
  return left >= MIN_TTL ? left : 0;
}

/**
 * Leaves the lock in the store for `ms` more, the rest of its throttle's window; `false` if it
 * was no longer ours.
 */
export async function holdWindow(store: LockStore, lock: HeldLock, ms: number): Promise<boolean> {
  if (store.holdWindow) return store.holdWindow(lock.key, lock.token, ms);
  const [kept] = await store.renew([
    { key: lock.key, token: lock.token, ttl: ms, fencingToken: lock.fencingToken },
  ]);
  if (kept === undefined) throw new LockConnectionError(lock.name, 'the hold was not decided');
  return kept;
}

/**
 * Frees a lock this process stopped counting on while the store may still hold it for it
 * (its renewals went unanswered): released for others, or, for a throttle whose window is
 * still open, left in the store until that window ends, so that losing the lock does not
 * shorten the window. Failures are left alone: the lock then ends by its TTL.
 */
export function freeAfterLoss(store: LockStore, lock: HeldLock): void {
  const left = windowLeft(lock);
  const freeing = left > 0 ? holdWindow(store, lock, left) : store.release(lock.key, lock.token);
  freeing.catch(() => undefined);
}
