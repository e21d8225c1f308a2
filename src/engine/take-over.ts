import {
  LockConnectionError,
  LockLostError,
  LockOptionsError,
  LockShuttingDownError,
} from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { LockHandle } from '../lock.js';
import { kindOfToken } from '../store/lock-kind.js';
import { facetOf } from '../store/capabilities.js';
import type { LockStore } from '../store/lock-store.interface.js';
import { monotonicNow } from './clock.js';
import type { HandleParts } from './handles.js';
import { newToken } from './token.js';

/** How an adoption took a lock over in the store. */
export interface TakenOver {
  /** The token the adopter holds the lock by: a new one of its own, or the handle's. */
  token: string;
  /** Monotonic ms at which the request that made the hold the adopter's was sent. */
  validFrom: number;
}

/**
 * The adoption's request to the store, which makes the hold this instance's, valid from when
 * that request was sent, as a grant is from when its attempt was. With the store's `transfer`,
 * the hold moves to a new token of this instance, in one compare-and-swap on the handle's token
 * and fencing token: from then on the handle's token holds nothing, so that a second adoption
 * of it anywhere is refused, and `inspect` names this instance. A store without it renews the
 * handle's own token (see {@link renewHold}). A hold that the store made this instance's when
 * the instance began shutting down, or whose answer came after its validity ran out, is given
 * back.
 * @throws LockLostError when the store no longer holds the handle's token, LockOptionsError when
 *   it holds it with another fencing token, LockConnectionError, LockShuttingDownError
 */
export async function takeOver(
  parts: HandleParts,
  id: LockId,
  handle: LockHandle,
  ttl: number,
): Promise<TakenOver> {
  const { store, gate, owner, instance } = parts;
  const { name, key } = id;
  const moving = store.transfer !== undefined;
  const token = moving ? newToken(kindOfToken(handle.token).tag, instance) : handle.token;
  // Read before the renewal: an altered handle renews nothing.
  if (!moving) await proveFencingToken(store, id, handle);
  const sentAt = monotonicNow();
  if (moving) await transferHold(store, id, handle, token, ttl);
  else await renewHold(store, id, handle, ttl);
  const refusal = gate.refuses(false)
    ? new LockShuttingDownError(name)
    : sentAt + ttl - owner.driftOf(ttl) <= monotonicNow()
      ? new LockConnectionError(
          name,
          `the adoption's validity (ttl ${ttl} ms) ran out before its answer came`,
        )
      : undefined;
  if (refusal) {
    store.release(key, token).catch(() => undefined);
    throw refusal;
  }
  return { token, validFrom: sentAt };
}

/**
 * Moves the hold from the handle's token to `adopted` (see `LockStore.transfer`). The store
 * compares the fencing token in the same step, so a handle whose fencing token was altered
 * changes nothing, and no separate read is needed to prove it. A transfer whose answer never
 * came may still have moved the hold: `adopted` is released then, so that it does not hold the
 * lock for nobody until its ttl ends.
 * @throws LockLostError, LockOptionsError, LockConnectionError
 */
async function transferHold(
  store: LockStore,
  { name, key }: LockId,
  { token, fencingToken }: LockHandle,
  adopted: string,
  ttl: number,
): Promise<void> {
  let outcome;
  try {
    outcome = await store.transfer?.(key, token, adopted, ttl, fencingToken);
  } catch (error) {
    store.release(key, adopted).catch(() => undefined);
    throw error;
  }
  if (outcome === 'fence-mismatch') throw alteredHandle(fencingToken);
  if (outcome !== 'transferred') {
    throw new LockLostError(
      name,
      'its handle could not be adopted: the token was gone from the store (expired, released, ' +
        'taken, or adopted already)',
    );
  }
}

/**
 * A store without `transfer`: a compare-and-pexpire with the handle's own token. The store
 * tells holders apart by the token alone, so the lock keeps the handing instance's token, and
 * an adoption of the same handle in another instance would renew it too.
 * @throws LockLostError, LockConnectionError
 */
async function renewHold(
  store: LockStore,
  { name, key }: LockId,
  { token, fencingToken }: LockHandle,
  ttl: number,
): Promise<void> {
  const [renewed] = await store.renew([{ key, token, ttl, fencingToken }]);
  if (renewed === undefined) throw new LockConnectionError(name, 'the adoption was not decided');
  if (!renewed) {
    throw new LockLostError(
      name,
      'its handle could not be adopted: the token was gone from the store (expired, released or taken)',
    );
  }
}

/**
 * The token proves who holds, not which fencing token the hold was given: a handle whose
 * fencing token was raised would have its writes accepted by a fenced resource and every later
 * genuine holder's refused. So, where the store cannot compare it in its transfer, the adopter
 * reads the fencing token the store recorded for the hold before it renews anything, and a
 * handle that names another is refused: the lock is left as it was, to its rightful holder or
 * to its ttl.
 * @throws LockLostError when the hold is gone, LockOptionsError for a forged fencing token
 */
async function proveFencingToken(
  store: LockStore,
  { name, key }: LockId,
  { token, fencingToken }: LockHandle,
): Promise<void> {
  const { holders } = await facetOf(store, 'inspect', 'LockService.adopt')(key);
  const hold = holders.find((holder) => holder.token === token);
  if (hold === undefined) {
    throw new LockLostError(name, 'its handle could not be adopted: the hold was gone');
  }
  if (hold.fencingToken !== undefined && hold.fencingToken !== fencingToken) {
    throw alteredHandle(fencingToken);
  }
}

function alteredHandle(fencingToken: number): LockOptionsError {
  return new LockOptionsError(
    'handle',
    fencingToken,
    'the fencing token the store recorded for this hold (the handle was altered)',
  );
}
