import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';

/** Stops the shared Redis and kills any server (Redis, ZooKeeper) that a test file failed to stop. */
export default async function globalTeardown() {
  const shared = /** @type {{ lockTestRedis?: import('./redis-server.js').RedisServer }} */ (
    globalThis
  );
  await shared.lockTestRedis?.stop();
  const file = process.env.LOCK_TEST_PIDS;
  if (!file || !existsSync(file)) return;
  for (const pid of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    if (isTestServer(pid)) process.kill(Number(pid), 'SIGKILL');
  }
  rmSync(dirname(file), { recursive: true, force: true });
}

/**
 * Guards against a pid that the system has since given to another process.
 * @param {string} pid
 */
function isTestServer(pid) {
  try {
    return (
      readFileSync(`/proc/${pid}/comm`, 'utf8').trim().startsWith('redis-server') ||
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('org.apache.zookeeper.server.')
    );
  } catch {
    return false;
  }
}
