import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';

/** How long the run may take to exit by itself once every test file has finished. */
const EXIT_GRACE_MS = 15_000;

/**
 * Stops the shared Redis and kills any server (Redis, Valkey, PgBouncer, ZooKeeper) that a test
 * file failed to stop.
 * A run that something a test left open (a socket, a timer, a child process) keeps alive fails,
 * naming what it found, instead of hanging.
 */
export default async function globalTeardown(
  /** @type {{ watch?: boolean, watchAll?: boolean }} */ config,
) {
  const shared = /** @type {{ lockTestRedis?: import('./redis-server.js').RedisServer }} */ (
    globalThis
  );
  await shared.lockTestRedis?.stop();
  const file = process.env.LOCK_TEST_PIDS;
  if (file && existsSync(file)) {
    for (const pid of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
      if (isTestServer(pid)) process.kill(Number(pid), 'SIGKILL');
    }
    rmSync(dirname(file), { recursive: true, force: true });
  }
  // In watch mode Jest stays alive by design, between runs.
  if (!config?.watch && !config?.watchAll) failIfTheRunDoesNotExit();
}

/**
 * Guards against a pid that the system has since given to another process.
 * @param {string} pid
 */
function isTestServer(pid) {
  try {
    const command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    return (
      command.startsWith('redis-server') ||
      command.startsWith('valkey-server') ||
      command === 'pgbouncer' ||
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('org.apache.zookeeper.server.')
    );
  } catch {
    return false;
  }
}

/**
 * Arms a timer that does not itself keep the process alive: it only fires when something else
 * does, past the grace, and then ends the run as failed, listing what was left open.
 */
function failIfTheRunDoesNotExit() {
  const timer = setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    console.error(
      `The test run did not exit ${EXIT_GRACE_MS / 1000} s after its last test: a test left ` +
        `something open (${open.join(', ')}). Failing the run instead of waiting for it.`,
    );
    process.exit(1);
  }, EXIT_GRACE_MS);
  timer.unref();
}
