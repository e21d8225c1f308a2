import { monotonicNow } from '../../engine/clock.js';
import type { StoredHold, StoredLock } from '../lock-store.interface.js';
import type { MemorySpace, Queues } from './memory-space.js';

/**
 * Who holds `key` in the memory space and how many wait, as the Redis store's `INSPECT_SCRIPT`
 * reads it: the mutex's holder, or the live holders of a semaphore or read-write lock (the key
 * then holds the kind's marker, which begins with `#`), and the live places of both lines.
 */
export function inspectSpace(space: MemorySpace, key: string): StoredLock {
  const now = monotonicNow();
  const waiting = livePlaces(space.queues, key, now) + livePlaces(space.lines, key, now);
  const held = space.live(space.locks, key);
  if (!held) return { holders: [], waiting };
  if (!held.value.startsWith('#')) {
    return { holders: [holdOf(held.value, held.expiresAt, held.fence, now)], waiting };
  }
  const holders = space.holders.get(key) ?? new Map<string, number>();
  const fences = space.fencesOf(holders);
  const live = [...holders].filter(([, expiresAt]) => expiresAt > now);
  return {
    holders: live.map(([token, expiresAt]) => holdOf(token, expiresAt, fences.get(token), now)),
    waiting,
  };
}

function holdOf(token: string, expiresAt: number, fence: number | undefined, now: number) {
  const hold: StoredHold = { token, ttlMs: Math.ceil(expiresAt - now) };
  if (fence !== undefined) hold.fencingToken = fence;
  return hold;
}

function livePlaces(queues: Queues, key: string, now: number): number {
  let live = 0;
  for (const place of queues.get(key)?.values() ?? []) if (place.leaseEnd > now) live++;
  return live;
}
