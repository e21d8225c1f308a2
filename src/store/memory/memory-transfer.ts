import { monotonicNow } from '../../engine/clock.js';
import { kindOfToken } from '../lock-kind.js';
import type { TransferOutcome } from '../lock-store.interface.js';
import type { MemorySpace } from './memory-space.js';

/** What {@link transferIn} moves: the hold of `token` on `key`, to `newToken`. */
export interface HoldTransfer {
  key: string;
  token: string;
  newToken: string;
  ttl: number;
  fencingToken: number;
}

/**
 * `LockStore.transfer` in a memory space, as the Redis `TRANSFER_SCRIPT` does it: a mutex's
 * entry takes the new token, or a semaphore permit or read-write share moves within its key's
 * holders and their fencing tokens (the kind's marker then lives as long as the longest holder),
 * for `ttl` from now, keeping its fencing token; only if the hold is live, has a fencing token
 * (a lock only reserved for a waiter has none), and that token is `fencingToken`.
 */
export function transferIn(space: MemorySpace, move: HoldTransfer): TransferOutcome {
  const { key, token, newToken, ttl, fencingToken } = move;
  const now = monotonicNow();
  const held = space.live(space.locks, key);
  const kind = kindOfToken(token);
  if (!kind.shared) {
    // The same transfer again finds the hold moved already (see `TRANSFER_SCRIPT`).
    if (held?.value === newToken && held.fence === fencingToken) return 'transferred';
    if (held?.value !== token || held.fence === undefined) return 'gone';
    if (held.fence !== fencingToken) return 'fence-mismatch';
    held.value = newToken;
    held.expiresAt = now + ttl;
    return 'transferred';
  }
  const holders = space.holders.get(key);
  if (held?.value !== kind.family || holders === undefined) return 'gone';
  const fences = space.fencesOf(holders);
  const fence = fences.get(token);
  if ((holders.get(token) ?? 0) <= now || fence === undefined) {
    const moved = (holders.get(newToken) ?? 0) > now && fences.get(newToken) === fencingToken;
    return moved ? 'transferred' : 'gone';
  }
  if (fence !== fencingToken) return 'fence-mismatch';
  holders.delete(token);
  fences.delete(token);
  holders.set(newToken, now + ttl);
  fences.set(newToken, fence);
  held.expiresAt = Math.max(...holders.values());
  return 'transferred';
}
