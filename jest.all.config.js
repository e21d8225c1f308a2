import base from './jest.config.js';
import { allTierOnly, splitAcrossTiers } from './test/support/tiers.js';

/**
 * `npm run test:all`: every spec the quick tier leaves out, against ZooKeeper, PostgreSQL and
 * PgBouncer, Valkey, Redis Cluster and Sentinel, RedLock's faults and every Redis client. Its
 * global setup fails at once, naming them, when servers it needs are missing.
 * @type {import('jest').Config}
 */
export default {
  ...base,
  testMatch: [...allTierOnly, ...splitAcrossTiers].map((path) =>
    path.endsWith('/') ? `<rootDir>/${path}**/*.spec.ts` : `<rootDir>/${path}`,
  ),
  testPathIgnorePatterns: ['/node_modules/'],
  // Its specs start JVMs, clusters and fleets of worker processes: two files at a time.
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/support/global-setup-all.js',
  setupFiles: ['<rootDir>/test/support/glide-log.js'],
  // One more try for a test whose timing missed on a loaded machine, named at the end.
  setupFilesAfterEnv: ['<rootDir>/test/support/retry-once.js'],
  reporters: [
    'default',
    '<rootDir>/test/support/glide-log-reporter.js',
    '<rootDir>/test/support/retried-reporter.js',
  ],
};
