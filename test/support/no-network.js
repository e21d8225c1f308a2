import net from 'node:net';

/**
 * The unit tier's guard (jest.unit.config.js `setupFiles`): a unit spec that opens a network
 * connection, to a Redis or anything else, fails at once instead of passing on a machine that
 * happens to run a server. Such a spec belongs to an integration tier (`npm test` or `npm run test:all`).
 */
net.Socket.prototype.connect = function refuseConnections() {
  throw new Error(
    'A unit spec opened a network connection: unit specs run with no server (move it out of ' +
      'test/unit/, to a tier that starts the servers it needs: see test/support/tiers.js).',
  );
};
