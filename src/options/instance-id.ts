import { hostname } from 'node:os';
import { LockOptionsError } from '../lock.errors.js';

/** The longest `instanceId`: it travels in every token the instance sends to the store. */
const MAX_INSTANCE_ID = 200;

/**
 * The module option `instanceId`, or `${hostname}:${pid}`.
 * @throws LockOptionsError for anything but a non-empty string of at most 200 characters
 */
export function resolveInstanceId(given: unknown): string {
  if (given === undefined) return `${hostname()}:${process.pid}`;
  if (typeof given !== 'string' || given.length === 0 || given.length > MAX_INSTANCE_ID) {
    throw new LockOptionsError(
      'instanceId',
      given,
      `a non-empty string of at most ${MAX_INSTANCE_ID} characters`,
    );
  }
  return given;
}
