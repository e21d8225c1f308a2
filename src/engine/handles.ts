import { LockLostError, LockOptionsError, LockShuttingDownError } from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { LockHandle } from '../lock.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { refuseUnsupported } from '../store/capabilities.js';
import type { LockStore } from '../store/lock-store.interface.js';
import type { LockProbe } from '../telemetry/lock-telemetry.js';
import { HeldLock, type LockOwner } from './held-lock.js';
import type { ShutdownGate } from './shutdown.js';
import { takeOver } from './take-over.js';
import type { Watchdog } from './watchdog.js';

/** The parts of the engine that handing locks off and adopting them work with. */
export interface HandleParts {
  readonly store: LockStore;
  readonly watchdog: Watchdog;
  readonly gate: ShutdownGate;
  readonly owner: LockOwner;
  /** What ends this instance's tokens (see `ownerMark`): an adopter's token names it. */
  readonly instance: string;
  /** The tokens whose adoption is on its way here (see {@link adopt}). */
  readonly adopting: Set<string>;
}

/**
 * `Lock.handOff`: renews the lock once more, then lets go of it here without touching the
 * store. The renewal comes first, while the lock is still held here, so that a hand-off that
 * fails (store unreachable, lock lost) leaves the lock as it was: still renewed, or known lost.
 * @throws LockOptionsError (ZooKeeper, `holdFor`), LockLostError, LockConnectionError
 */
export async function handOff(parts: HandleParts, lock: HeldLock): Promise<LockHandle> {
  const { ttl, watchdog, holdFor, name } = lock;
  refuseUnsupported({ ttl, waitTimeout: 0, watchdog, handle: 'handOff' }, parts.store.capabilities);
  if (holdFor !== undefined) {
    // The throttle's window is dated on this process's monotonic clock, which no other reads.
    throw new LockOptionsError('holdFor', holdFor, 'no holdFor on a lock that is handed off');
  }
  if (!lock.held || !(await parts.watchdog.extend(lock, ttl)) || !lock.markHandedOff()) {
    throw lock.lost
      ? (lock.signal.reason as LockLostError)
      : new LockLostError(name, 'it was released or handed off before this hand-off');
  }
  parts.watchdog.untrack(lock);
  parts.store.handedOff?.(lock.key, lock.token);
  return lock.handle();
}

/**
 * `LockService.adopt`: makes the handle's lock this process's (see {@link takeOver}), renewed
 * by its watchdog from then on. With a store that cannot move the hold to a token of its own,
 * the store tells holders apart by the token alone, so a token held here already, or whose
 * adoption here is on its way, is refused before anything is sent: two adoptions of one handle
 * would both renew it and both hold the lock. (A store that moves the hold refuses the second
 * adoption itself, in any instance: the handle's token holds nothing any more.)
 * @throws LockLostError when the store no longer holds the handle's token, or this instance
 *   holds it (or is adopting it) already; LockOptionsError for an altered fencing token
 */
export async function adopt(
  parts: HandleParts,
  id: LockId,
  handle: LockHandle,
  options: ResolvedAcquireOptions,
  probe?: LockProbe,
): Promise<HeldLock> {
  const { store, watchdog, gate, owner, adopting } = parts;
  const { name, key } = id;
  const { fencingToken } = handle;
  const { ttl } = options;
  refuseUnsupported({ ...options, handle: 'adopt' }, store.capabilities);
  if (gate.refuses(false)) throw new LockShuttingDownError(name);
  if (watchdog.holds(handle.token) || adopting.has(handle.token)) {
    throw new LockLostError(name, 'its handle is held by this instance already (or being adopted)');
  }
  adopting.add(handle.token);
  try {
    const { token, validFrom } = await takeOver(parts, id, handle, ttl);
    const grant = { name, key, token, fencingToken, ttl, watchdog: options.watchdog, validFrom };
    const lock = new HeldLock(owner, { ...grant, probe });
    watchdog.track(lock);
    return lock;
  } finally {
    adopting.delete(handle.token);
  }
}

/**
 * Checks that `handle` is one that `handOff` made, for a lock of the adopter's key prefix.
 * @throws LockOptionsError naming what is wrong, never showing the token
 */
export function checkHandle(handle: unknown, id: (name: string) => LockId): LockId {
  const given = (
    typeof handle === 'object' && handle !== null ? handle : {}
  ) as Partial<LockHandle>;
  const { name, key, token, fencingToken, ttl } = given;
  const valid =
    typeof name === 'string' &&
    typeof key === 'string' &&
    typeof token === 'string' &&
    token.length > 0 &&
    Number.isSafeInteger(fencingToken) &&
    Number.isSafeInteger(ttl);
  if (!valid) {
    throw new LockOptionsError('handle', typeof handle, 'a LockHandle from Lock.handOff()');
  }
  const lockId = id(name);
  if (lockId.key !== key) {
    throw new LockOptionsError(
      'handle',
      key,
      `a handle for the key "${lockId.key}" (same keyPrefix)`,
    );
  }
  return lockId;
}
