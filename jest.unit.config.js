import base from './jest.config.js';

/**
 * `npm run test:unit`: the specs under test/unit, which need no server, no build and no
 * network, so they run anywhere in seconds. No globalSetup: it would start the shared Redis;
 * and a guard that fails any spec that opens a connection.
 * @type {import('jest').Config}
 */
export default {
  ...base,
  roots: ['<rootDir>/test/unit'],
  globalSetup: undefined,
  globalTeardown: undefined,
  setupFiles: ['<rootDir>/test/support/no-network.js'],
};
