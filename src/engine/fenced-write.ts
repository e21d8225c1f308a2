import { toDataKey } from '../keys/lock-keys.js';
import { LockOptionsError, StaleFencingTokenError } from '../lock.errors.js';
import { checkTtl } from '../options/option-checks.js';
import { facetOf } from '../store/capabilities.js';
import type { LockStore } from '../store/lock-store.interface.js';

/**
 * The fencing guard (`LockService.writeFenced`): writes `value` to the data key of `resource`
 * if `fencingToken` is at least the highest one presented for it.
 * @throws StaleFencingTokenError when a newer holder has already written
 */
export async function writeFenced(
  store: LockStore,
  keyPrefix: string,
  request: { resource: string; value: string; fencingToken: number; ttl?: number },
): Promise<void> {
  const { resource, value, fencingToken } = request;
  const key = toDataKey(keyPrefix, resource);
  if (typeof value !== 'string') throw new LockOptionsError('value', value, 'a string');
  if (!Number.isSafeInteger(fencingToken) || fencingToken <= 0) {
    throw new LockOptionsError('fencingToken', fencingToken, 'a fencing token from a Lock');
  }
  const ttl = request.ttl === undefined ? 0 : checkTtl('ttl', request.ttl);
  const write = facetOf(store, 'writeFenced');
  const result = await write(key, value, fencingToken, ttl);
  if (!result.written) {
    throw new StaleFencingTokenError(resource, fencingToken, result.highestSeen);
  }
}
