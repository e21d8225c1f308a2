import { DRIFT_MS } from '../lock.constants.js';

/** Monotonic milliseconds. */
export const monotonicNow = (): number => performance.now();

/**
 * How much of a TTL our idea of a lock's validity gives up, so that it ends before the
 * store's does even if the clocks of this process and the store drift apart: a share of the TTL
 * plus a constant.
 */
export function driftOf(ttl: number, driftFactor: number): number {
  return Math.floor(ttl * driftFactor) + DRIFT_MS;
}
