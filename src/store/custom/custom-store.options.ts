import { LockOptionsError } from '../../lock.errors.js';
import { isRecord } from '../../options/option-checks.js';
import type { LockStore } from '../lock-store.interface.js';

/** The methods every store has (see `LockStore`). */
const REQUIRED_METHODS = ['acquire', 'release', 'renew', 'subscribe', 'ping', 'close'] as const;
/** The facets a store may have: absent, or methods. */
const OPTIONAL_METHODS = [
  'isLocked',
  'inspect',
  'forceRelease',
  'writeFenced',
  'holdWindow',
  'handedOff',
  'transfer',
  'connectionDetails',
  'open',
] as const;

/** What `capabilities` must declare, and as what. */
const CAPABILITIES: Record<string, (value: unknown) => boolean> = {
  backend: (value) => typeof value === 'string' && value.length > 0,
  queueing: (value) => typeof value === 'boolean',
  throttle: (value) => typeof value === 'boolean' || value === 'mutex',
  kinds: (value) => typeof value === 'boolean',
  keepAlive: (value) => value === 'ttl' || value === 'session',
  handles: (value) => typeof value === 'boolean',
};

/** The options of the built-in backends, and `fair`, which a store of one's own decides. */
const REFUSED_BESIDE = [
  'fair',
  'redis',
  'redisClient',
  'memorySpace',
  'nodeTimeout',
  'waitForReplicas',
];

/**
 * The store given as `store`, once checked, and the module options beside it checked for those
 * that only the built-in backends take.
 * @throws LockOptionsError
 */
export function resolveOwnStore(given: Record<string, unknown>, store: object): LockStore {
  for (const option of REFUSED_BESIDE) {
    if (given[option] !== undefined) {
      throw new LockOptionsError(option, given[option], 'nothing with a store of your own');
    }
  }
  const own = checkOwnStore(store);
  if (given.watchdog === false && own.capabilities.keepAlive === 'session') {
    // Every acquisition would be refused: a hold there lives as long as the holder's session.
    throw new LockOptionsError('watchdog', false, `nothing with ${own.capabilities.backend}`);
  }
  return own;
}

/** Whether `store` is an object given as a store of one's own (not a backend's name). */
export function isOwnStore(store: unknown): store is object {
  return typeof store === 'object' && store !== null;
}

/**
 * Checks, at boot, that an object given as `store` looks like a {@link LockStore}: its methods
 * are there and its capabilities are declared. What it does with them is its own business; the
 * library's store-contract spec shows what it owes.
 * @throws LockOptionsError naming what is missing
 */
function checkOwnStore(store: object): LockStore {
  const candidate = store as Record<string, unknown>;
  for (const method of REQUIRED_METHODS) {
    if (typeof candidate[method] !== 'function') {
      throw new LockOptionsError(`store.${method}`, candidate[method], 'a method (see LockStore)');
    }
  }
  for (const method of OPTIONAL_METHODS) {
    if (candidate[method] !== undefined && typeof candidate[method] !== 'function') {
      throw new LockOptionsError(
        `store.${method}`,
        candidate[method],
        'a method, or nothing (see LockStore)',
      );
    }
  }
  if (typeof candidate.writeFenced === 'function' && candidate.writeFenced.length === 5) {
    // Written for the contract that passed a guard key second: every argument would shift.
    throw new LockOptionsError(
      'store.writeFenced',
      candidate.writeFenced,
      'a method of (resource, value, fencingToken, ttl), without the guard key it once took',
    );
  }
  const capabilities = candidate.capabilities;
  if (!isRecord(capabilities)) {
    throw new LockOptionsError(
      'store.capabilities',
      capabilities,
      'an object (see LockStoreCapabilities)',
    );
  }
  for (const [name, valid] of Object.entries(CAPABILITIES)) {
    if (!valid(capabilities[name])) {
      throw new LockOptionsError(
        `store.capabilities.${name}`,
        capabilities[name],
        'a value that LockStoreCapabilities allows',
      );
    }
  }
  if (capabilities.handles === true && candidate.transfer === undefined && !candidate.inspect) {
    // `adopt` reads the hold's fencing token where it cannot move the hold.
    throw new LockOptionsError(
      'store.inspect',
      candidate.inspect,
      'a method, or a transfer, for a store that declares handles',
    );
  }
  return store as LockStore;
}
