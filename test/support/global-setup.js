import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from './redis-server.js';

/**
 * The quick tier's global setup: fails the run at once when redis-server is missing, and starts
 * the Redis that most test files share (each under its own key prefix). Files that inject
 * faults start servers of their own.
 */
export default async function globalSetup() {
  process.env.LOCK_TEST_TIER = 'quick';
  if (!installed('redis-server')) {
    // One line, and no stack: what is missing and how to get it.
    console.error(
      '\nredis-server is not on PATH: install it (`sudo apt-get install -y redis-server` on ' +
        'Debian/Ubuntu, `brew install redis` on macOS), then run `npm test` again.',
    );
    process.exit(1);
  }
  await startSharedRedis();
}

/**
 * Starts the shared Redis, and makes the run's folder for the pids of the servers it starts.
 */
export async function startSharedRedis() {
  const runDir = mkdtempSync(join(tmpdir(), 'lock-tests-'));
  process.env.LOCK_TEST_PIDS = join(runDir, 'pids');
  const server = await RedisServer.start();
  process.env.LOCK_TEST_REDIS_URL = server.url;
  /** @type {{ lockTestRedis?: RedisServer }} */ (globalThis).lockTestRedis = server;
  return runDir;
}

/**
 * Whether `program --version` runs.
 * @param {string} program
 * @param {string} [flag]
 */
export function installed(program, flag = '--version') {
  const probe = spawnSync(program, [flag], { encoding: 'utf8' });
  return !probe.error && probe.status === 0;
}
