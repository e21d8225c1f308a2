import { allTierOnly } from './test/support/tiers.js';

/**
 * `npm test`, the quick tier: the unit specs and every integration spec that needs nothing but
 * redis-server (test/support/tiers.js says which). Jest runs in native ESM mode
 * (`--experimental-vm-modules`, set by the npm scripts), because Nest 12 ships ESM-only packages.
 * @type {import('jest').Config}
 */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // The sample imports the library by its package name, as a user would.
    '^nestjs-redis-lock$': '<rootDir>/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...allTierOnly.map((path) => `<rootDir>/${path}`)],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 30000,
  // Most specs wait on servers and timers far more than they compute: more files at once than
  // there are cores keeps the machine busy without making the specs' own timing tight.
  maxWorkers: 3,
  // A cache of this checkout's own: one shared by several checkouts of the project (in /tmp
  // by default) has served a module transformed from another checkout's older source.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
