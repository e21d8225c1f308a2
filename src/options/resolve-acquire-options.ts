import { LockOptionsError } from '../lock.errors.js';
import type { AcquireOptions, ResolvedAcquireOptions } from './lock-options.interface.js';
import {
  checkBoolean,
  checkTtl,
  checkWaitTimeout,
  rejectUnknown,
  requireObject,
} from './option-checks.js';

const ACQUIRE_OPTION_NAMES = new Set(['ttl', 'waitTimeout', 'watchdog', 'holdFor', 'signal']);

/**
 * Validates the options of one acquisition against the given defaults; `where` names the
 * caller (e.g. a decorated method) in error messages.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: ResolvedAcquireOptions,
  where?: string,
): ResolvedAcquireOptions {
  if (options === undefined) return defaults;
  const given = requireObject('options', options, where);
  rejectUnknown(given, ACQUIRE_OPTION_NAMES, where);
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
  };
}

function checkSignal(value: unknown, where?: string): AbortSignal {
  if (!(value instanceof AbortSignal)) {
    throw new LockOptionsError('signal', value, 'an AbortSignal', where);
  }
  return value;
}
