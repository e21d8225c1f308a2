import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { installed, startSharedRedis } from './global-setup.js';
import { pgbouncerBinary } from './pgbouncer.js';
import { postgresBinDir } from './postgres-server.js';
import { ZOOKEEPER_JAR } from './zookeeper-server.js';

/**
 * `npm run test:all`'s global setup: fails the run at once, naming every server that is missing
 * and `npm run test:servers`, which installs them; then starts the shared Redis, and sends
 * GLIDE's log to a file of the run's (test/support/glide-log.js).
 */
export default async function globalSetupAll() {
  process.env.LOCK_TEST_TIER = 'all';
  const missing = missingServers();
  if (missing.length > 0) {
    console.error(
      `\nnpm run test:all needs servers that are not installed: ${missing.join(', ')}.\n` +
        'On Debian or Ubuntu, `npm run test:servers` installs them (as root, or with sudo).',
    );
    process.exit(1);
  }
  const runDir = await startSharedRedis();
  process.env.GLIDE_LOG_DIR = join(runDir, 'glide-logs');
}

/** The servers (and programs) the all tier starts that this machine does not have. */
function missingServers() {
  /** @type {[string, () => boolean][]} */
  const probes = [
    ['redis-server', () => installed('redis-server')],
    ['redis-cli', () => installed('redis-cli')],
    ['valkey-server (Valkey 8)', () => installed('valkey-server')],
    ['PostgreSQL (initdb, pg_ctl)', () => succeeds(postgresBinDir)],
    ['pgbouncer', () => succeeds(pgbouncerBinary)],
    ['ZooKeeper', () => existsSync(ZOOKEEPER_JAR)],
    ['java (for ZooKeeper)', () => installed('java', '-version')],
  ];
  return probes.filter(([, probe]) => !probe()).map(([name]) => name);
}

/** @param {() => unknown} find */
function succeeds(find) {
  try {
    find();
    return true;
  } catch {
    return false;
  }
}
