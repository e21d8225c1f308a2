import { lockNameOf } from '../../keys/lock-keys.js';
import { LockQuorumError } from '../../lock.errors.js';
import type { TransferOutcome, TransferParams } from '../lock-store.interface.js';
import { askMasters, count, type RedlockMaster } from './ask-masters.js';

/** The arguments of `transfer`, for the store that passes them on. */
export type { TransferParams };

/**
 * `LockStore.transfer` on RedLock: each master moves the hold it has of the handle's token to
 * the new token if it recorded the handle's fencing token for it (the lock's, which the
 * acquisition wrote to every master that held it), and the hold is the new token's once a
 * majority moved it. Masters that did not move it get the new token from the adopter's first
 * renewal that a majority confirms, where the key is free (see `RedlockLockStore.repair`).
 *
 * Otherwise the new token is withdrawn from every master, as a failed attempt's grants are,
 * also from those that seemed to refuse (a reply may have been lost): each master's connection
 * runs the withdrawal after the transfer. Where the hold had moved, the key is then free, and
 * the handle's token holds there no more. The outcome is a refusal once more masters refused
 * than may fail (`fence-mismatch` when most of those found another fencing token); it is a
 * `LockQuorumError` when, with the masters that failed, too few answered to tell.
 *
 * @param keyPrefix the module's `keyPrefix`, which the error leaves out of the key it names
 * @throws LockQuorumError
 */
export async function transferOnMasters(
  masters: readonly RedlockMaster[],
  keyPrefix: string,
  [key, token, newToken, ttl, fencingToken]: TransferParams,
): Promise<TransferOutcome> {
  const quorum = Math.floor(masters.length / 2) + 1;
  const tolerated = masters.length - quorum;
  const moved = (outcome: TransferOutcome) => outcome === 'transferred';
  const tally = await askMasters(
    masters,
    (store) => store.transfer(key, token, newToken, ttl, fencingToken),
    (answers, failed) =>
      count(answers, moved) >= quorum ||
      count(answers, (outcome) => !moved(outcome)) > tolerated ||
      failed > tolerated,
  );
  const answers = tally.answers.map(({ value }) => value);
  if (count(answers, moved) >= quorum) return 'transferred';
  for (const { store } of masters) void store.withdraw(key, newToken).catch(() => undefined);
  const refused = count(answers, (outcome) => !moved(outcome));
  if (refused <= tolerated) {
    const name = lockNameOf(keyPrefix, key);
    throw new LockQuorumError(name, 'transfer', tally.failures, quorum, masters.length);
  }
  const mismatched = count(answers, (outcome) => outcome === 'fence-mismatch');
  return mismatched > refused - mismatched ? 'fence-mismatch' : 'gone';
}
