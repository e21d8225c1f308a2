/**
 * The two tiers of the suite.
 *
 * - **quick** (`npm test`): the unit specs, and every integration spec that needs nothing but
 *   `redis-server`, through ioredis or on the memory store. It covers the core on a real Redis
 *   and runs in minutes.
 * - **all** (`npm run test:all`): everything else: ZooKeeper, PostgreSQL and PgBouncer, Valkey,
 *   Redis Cluster and Sentinel, RedLock's faults, the other Redis clients, the safety checker.
 *
 * A spec file belongs to one tier, by its path below. A file that checks one behaviour on several
 * backends may be split across both: it lists its cases per tier with {@link byTier} (or
 * registers a block with {@link onlyIn}), and is named in {@link splitAcrossTiers}.
 * `test/unit/test-tiers.spec.ts` keeps these lists and the files in step.
 */

/** @typedef {'quick' | 'all'} Tier */

/**
 * The tier this run is, as the run's global setup set it.
 * @type {Tier}
 */
export const TIER = process.env.LOCK_TEST_TIER === 'all' ? 'all' : 'quick';

/** Spec files and folders (relative to the repository) that run in the all tier only. */
export const allTierOnly = [
  'test/clients/',
  'test/postgres/',
  'test/topologies/',
  'test/zookeeper/',
  'test/engine/client-packages.spec.ts',
  'test/engine/glide-clients.spec.ts',
  'test/leader/leader-postgres-partition.spec.ts',
  'test/leader/leader-processes.spec.ts',
  'test/leader/leader-zookeeper-partition.spec.ts',
  'test/safety/checker.spec.ts',
  'test/safety/sql-fencing.spec.ts',
];

/** Spec files with cases in both tiers, each choosing its own with `byTier` or `onlyIn`. */
export const splitAcrossTiers = [
  'test/contexts/rolling-deploy.spec.ts',
  'test/contexts/scheduled.spec.ts',
  'test/contract/lock-store-contract.spec.ts',
  'test/contract/store-contract.spec.ts',
  'test/engine/arrival-order.spec.ts',
  'test/engine/client-order.spec.ts',
  'test/engine/faults.spec.ts',
  'test/engine/turn-channels.spec.ts',
  'test/health/lock-health.spec.ts',
  'test/leader/leader-election.spec.ts',
  'test/safety/acl-prefix.spec.ts',
  'test/telemetry/lock-metrics.spec.ts',
];

/**
 * The cases of a `describe.each` that belong to this run's tier: those that need only
 * redis-server (or nothing) in the quick tier, the others in the all tier.
 * @template T
 * @param {{ quick?: T[], all?: T[] }} cases
 * @returns {T[]}
 */
export function byTier(cases) {
  return (TIER === 'all' ? cases.all : cases.quick) ?? [];
}

/**
 * Registers a block of tests in one tier only (a block that needs a server beyond
 * redis-server belongs to `all`).
 * @param {Tier} tier
 * @param {() => void} register
 */
export function onlyIn(tier, register) {
  if (TIER === tier) register();
}

/**
 * Fails at once when a quick-tier spec starts a server the quick tier does not have, so that
 * the quick tier keeps needing nothing but redis-server, whatever else the machine has.
 * @param {string} server
 */
export function assertAllTier(server) {
  // Only specs have a tier: the safety checker's script and the benches start what they need.
  if (TIER !== 'all' && process.env.JEST_WORKER_ID !== undefined) {
    throw new Error(
      `${server} is started by a spec of the quick tier (npm test), which needs nothing but ` +
        'redis-server: list the spec (or its case) in the all tier, in test/support/tiers.js.',
    );
  }
}
