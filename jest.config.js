/**
 * Jest runs in native ESM mode (`--experimental-vm-modules`, set by `npm test`),
 * because Nest 12 ships ESM-only packages.
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
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 30000,
  // A cache of this checkout's own: one shared by several checkouts of the project (in /tmp
  // by default) has served a module transformed from another checkout's older source.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
