import { LockOptionsError } from '../lock.errors.js';
import type {
  AcquireOptions,
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from './lock-options.interface.js';
import {
  checkBoolean,
  checkTtl,
  checkWaitTimeout,
  rejectUnknown,
  requireObject,
} from './option-checks.js';
import { rejectOnZooKeeper } from './zookeeper-options.js';

const ACQUIRE_OPTION_NAMES = new Set([
  'ttl',
  'waitTimeout',
  'watchdog',
  'holdFor',
  'signal',
  'limit',
  'mode',
]);

/** The largest semaphore `limit`: far beyond any real need, and safe in a token and in Lua. */
export const MAX_LIMIT = 1_000_000;

/**
 * Validates the options of one acquisition against the given defaults and what the `store`
 * can honour; `where` names the caller (e.g. a decorated method) in error messages.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: ResolvedAcquireOptions,
  store: ResolvedLockOptions['store'],
  where?: string,
): ResolvedAcquireOptions {
  if (options === undefined) return defaults;
  const resolved = resolveGiven(options, defaults, where);
  if (store === 'zookeeper') rejectOnZooKeeper(resolved, where);
  return resolved;
}

function resolveGiven(
  options: AcquireOptions,
  defaults: ResolvedAcquireOptions,
  where?: string,
): ResolvedAcquireOptions {
  const given = requireObject('options', options, where);
  rejectUnknown(given, ACQUIRE_OPTION_NAMES, where);
  const limit = given.limit === undefined ? undefined : checkLimit(given.limit, where);
  const mode = given.mode === undefined ? undefined : checkMode(given.mode, where);
  if (limit !== undefined && mode !== undefined) {
    throw new LockOptionsError(
      'limit',
      limit,
      `no limit together with mode '${mode}' (a read-write lock has no limit)`,
      where,
    );
  }
  return {
    ttl: given.ttl === undefined ? defaults.ttl : checkTtl('ttl', given.ttl, where),
    waitTimeout:
      given.waitTimeout === undefined
        ? defaults.waitTimeout
        : checkWaitTimeout('waitTimeout', given.waitTimeout, where),
    watchdog:
      given.watchdog === undefined
        ? defaults.watchdog
        : checkBoolean('watchdog', given.watchdog, where),
    holdFor: given.holdFor === undefined ? undefined : checkTtl('holdFor', given.holdFor, where),
    signal: given.signal === undefined ? undefined : checkSignal(given.signal, where),
    limit,
    mode,
  };
}

function checkLimit(value: unknown, where?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIMIT) {
    throw new LockOptionsError('limit', value, `an integer from 1 to ${MAX_LIMIT}`, where);
  }
  return value;
}

function checkMode(value: unknown, where?: string): 'read' | 'write' {
  if (value !== 'read' && value !== 'write') {
    throw new LockOptionsError('mode', value, `'read' or 'write'`, where);
  }
  return value;
}

function checkSignal(value: unknown, where?: string): AbortSignal {
  if (!(value instanceof AbortSignal)) {
    throw new LockOptionsError('signal', value, 'an AbortSignal', where);
  }
  return value;
}
