import { LockOptionsError } from '../lock.errors.js';
import type { AcquireOptions, ResolvedAcquireOptions } from './lock-options.interface.js';
import {
  checkBoolean,
  checkTtl,
  checkWaitTimeout,
  rejectUnknown,
  requireObject,
} from './option-checks.js';
import { refuseUnsupported, type LockStoreCapabilities } from '../store/capabilities.js';

const ACQUIRE_OPTION_NAMES = new Set([
  'ttl',
  'waitTimeout',
  'watchdog',
  'holdFor',
  'signal',
  'limit',
  'permits',
  'mode',
  'label',
]);

/** The longest `label`: a name for dashboards, not a key. */
export const MAX_LABEL_LENGTH = 256;

/** The largest semaphore `limit`: far beyond any real need, and safe in a token and in Lua. */
export const MAX_LIMIT = 1_000_000;

/**
 * Validates the options of one acquisition against the given defaults and what the store
 * can honour (its `capabilities`); `where` names the caller (e.g. a decorated method) in error messages.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: ResolvedAcquireOptions,
  capabilities: LockStoreCapabilities,
  where?: string,
): ResolvedAcquireOptions {
  if (options === undefined) return defaults;
  const resolved = resolveGiven(options, defaults, where);
  refuseUnsupported(resolved, capabilities, where);
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
    ...(given.permits === undefined ? {} : { permits: checkPermits(given.permits, limit, where) }),
    mode,
    label: given.label === undefined ? undefined : checkLabel(given.label, where),
  };
}

/** `permits`, from 1 to the semaphore's `limit` (1 for a mutex, a read or a write share). */
function checkPermits(value: unknown, limit = 1, where?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > limit) {
    const most =
      limit === 1 ? '1 (no more than the limit: give limit too)' : `${limit} (the limit)`;
    throw new LockOptionsError('permits', value, `an integer from 1 to ${most}`, where);
  }
  return value;
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

function checkLabel(value: unknown, where?: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LABEL_LENGTH) {
    throw new LockOptionsError(
      'label',
      value,
      `a string of 1 to ${MAX_LABEL_LENGTH} characters`,
      where,
    );
  }
  return value;
}

function checkSignal(value: unknown, where?: string): AbortSignal {
  if (!(value instanceof AbortSignal)) {
    throw new LockOptionsError('signal', value, 'an AbortSignal', where);
  }
  return value;
}
