import { monotonicNow } from './clock.js';
import type { HeldLock } from './held-lock.js';

/**
 * How many of `locks` that the watchdog renews are renewed late: their renewal was due (a third
 * of the ttl after the last confirmed one) more than a sixth of the ttl ago and has not been
 * confirmed, so less than half of the ttl is left of their validity. The event loop, or the
 * store, is then too slow for these ttls. Counted from the renewal's due time, not the
 * validity, so that a large drift margin or a short handover lease does not count as late.
 */
export function lateRenewals(locks: Iterable<HeldLock>, now = monotonicNow()): number {
  let late = 0;
  for (const lock of locks) {
    if (lock.watchdog && lock.held && now > lock.renewAt + lock.ttl / 6) late++;
  }
  return late;
}
