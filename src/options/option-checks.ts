import { MAX_TIMER_MS, MIN_TTL } from '../lock.constants.js';
import { LockOptionsError } from '../lock.errors.js';

// The checks that the resolvers share. Each returns the value it was given, typed, or throws a
// LockOptionsError naming the option; `where` names who was given it (e.g. a decorated method).

/** A TTL: an integer number of milliseconds between {@link MIN_TTL} and the timer limit. */
export function checkTtl(name: string, value: unknown, where?: string): number {
  return checkDuration(name, value, { min: MIN_TTL }, where);
}

/** How long to wait for a held lock: `0` gives up at once, `Infinity` waits forever. */
export function checkWaitTimeout(name: string, value: unknown, where?: string): number {
  return checkDuration(name, value, { min: 0, orInfinity: true }, where);
}

/** A grace period: an integer number of milliseconds, `0` for none. */
export function checkGrace(name: string, value: unknown): number {
  return checkDuration(name, value, { min: 0 });
}

/** A bound on how long an answer may take: an integer number of milliseconds, at least 1. */
export function checkTimeout(name: string, value: unknown): number {
  return checkDuration(name, value, { min: 1 });
}

/** The range of a duration in ms: from `min` to the timer limit, and `Infinity` if allowed. */
interface DurationRange {
  min: number;
  orInfinity?: boolean;
}

function checkDuration(
  name: string,
  value: unknown,
  { min, orInfinity = false }: DurationRange,
  where?: string,
): number {
  if (orInfinity && value === Infinity) return value;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < min ||
    value > MAX_TIMER_MS
  ) {
    throw new LockOptionsError(
      name,
      value,
      `an integer number of milliseconds from ${min} to ${MAX_TIMER_MS}${orInfinity ? ', or Infinity' : ''}`,
      where,
    );
  }
  return value;
}

/** A `true` or `false`, nothing truthy. */
export function checkBoolean(name: string, value: unknown, where?: string): boolean {
  if (typeof value !== 'boolean') throw new LockOptionsError(name, value, 'a boolean', where);
  return value;
}

/** A plain object of options (not `null`, not an array). */
export function requireObject(
  name: string,
  value: unknown,
  where?: string,
): Record<string, unknown> {
  if (!isRecord(value)) throw new LockOptionsError(name, value, 'an object', where);
  return value;
}

/** Refuses the first option not in `known`, so that a misspelt option does not pass unseen. */
export function rejectUnknown(
  given: Record<string, unknown>,
  known: Set<string>,
  where?: string,
): void {
  for (const name of Object.keys(given)) {
    if (!known.has(name)) {
      throw new LockOptionsError(
        name,
        given[name],
        `no such option (known: ${[...known].join(', ')})`,
        where,
      );
    }
  }
}

/** An object that is not `null` nor an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
