import type { LockStoreCapabilities } from '../capabilities.js';

/** What RedLock can do, and why it lacks the rest. */
export const REDLOCK_CAPABILITIES: LockStoreCapabilities = {
  backend: 'RedLock',
  queueing: false,
  throttle: true,
  kinds: false,
  keepAlive: 'ttl',
  leadership: false,
  handles: true,
  why: {
    // A term lasts for days, not for a section: see docs/leader-election.md#redlock.
    leadership:
      ': RedLock keeps no line across its masters, so a resigning or restarting leader would ' +
      'race its standbys instead of handing over, and a term that lasts for days would rest ' +
      "on RedLock's assumptions about clocks and master restarts all that time; use one " +
      'Redis, Sentinel or Cluster, or ZooKeeper',
    // Permits counted on independent masters do not add up to a limit (each master may count
    // a different majority of holders, so up to about N/⌊N/2+1⌋ × limit callers could hold
    // at once), and the masters keep no common queue to serve waiters in order.
    kinds:
      ' (several masters): semaphores and read-write locks need one Redis, Sentinel or ' +
      'Cluster, or the memory store',
    // A resource guarded on N masters would need quorum reads as well as writes.
    writeFenced:
      ': writeFenced keeps the resource in the lock store, and RedLock has no single store; ' +
      'compare fencing tokens in the resource itself (see the SQL example in the README)',
  },
};
