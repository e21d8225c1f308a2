import { ownerOfToken } from './engine/token.js';
import { kindOfToken } from './store/lock-kind.js';
import type { StoredLock } from './store/lock-store.interface.js';

/**
 * Who holds a key and how many wait for it, as the store saw it at one moment
 * (`LockService.inspect`).
 *
 * @example
 * ```ts
 * const info = await locks.inspect('report:daily');
 * if (info.state === 'held') console.log(`held by ${info.holders[0].owner}, ${info.waiting} waiting`);
 * ```
 */
export interface LockInfo {
  /** The full key in the store (prefix included), as `Lock.key`. */
  key: string;
  state: 'free' | 'held';
  /** What the key is held as, while it is held. */
  kind?: 'mutex' | 'semaphore' | 'read-write';
  /** A semaphore's limit. */
  limit?: number;
  /** One entry per holder: a mutex and a write lock have one, a semaphore up to `limit`. */
  holders: LockHolder[];
  /**
   * Callers with a place in the store's line for the key: with `fair: false` and on RedLock
   * waiters keep no place in the store (each waits in its own process), so this is 0 there.
   */
  waiting: number;
}

/** One holder of a key, in a {@link LockInfo}. */
export interface LockHolder {
  /** The holder's `instanceId` (module option); `'unknown'` for a version that recorded none. */
  owner: string;
  /**
   * How long the hold still lives unless renewed, in ms; -1 on ZooKeeper, where a hold lasts as
   * long as its holder's session.
   */
  ttlMs: number;
  /**
   * The fencing token the holder was given; absent while the lock (or permit) is only reserved
   * for the head of the line, which has not taken it yet, where the store reserves it.
   */
  fencingToken?: number;
  /** A read-write lock's holder: reading or writing. */
  mode?: 'read' | 'write';
  /** A semaphore's holder: how many of its permits this hold takes (1 unless weighted). */
  permits?: number;
}

/** The public view of what the store keeps of `key`. */
export function lockInfoOf(key: string, stored: StoredLock): LockInfo {
  const { waiting } = stored;
  if (stored.holders.length === 0) return { key, state: 'free', holders: [], waiting };
  const kinds = stored.holders.map(({ token }) => kindOfToken(token));
  const holders = stored.holders.map(({ token, ttlMs, fencingToken }, i): LockHolder => {
    const holder: LockHolder = { owner: ownerOfToken(token) ?? 'unknown', ttlMs };
    if (fencingToken !== undefined) holder.fencingToken = fencingToken;
    const { type } = kinds[i];
    if (type === 'read' || type === 'write') holder.mode = type;
    if (type === 'semaphore') holder.permits = kinds[i].permits;
    return holder;
  });
  const kind = kinds[0];
  switch (kind.type) {
    case 'mutex':
      return { key, state: 'held', kind: 'mutex', holders, waiting };
    case 'semaphore':
      return { key, state: 'held', kind: 'semaphore', limit: kind.limit, holders, waiting };
    default:
      return { key, state: 'held', kind: 'read-write', holders, waiting };
  }
}
