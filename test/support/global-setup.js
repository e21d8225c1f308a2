import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertRedisServerInstalled, RedisServer } from './redis-server.js';

/**
 * Fails the run at once when redis-server is missing, and starts the Redis that most test files
 * share (each under its own key prefix). Files that inject faults start servers of their own.
 */
export default async function globalSetup() {
  assertRedisServerInstalled();
  process.env.LOCK_TEST_PIDS = join(mkdtempSync(join(tmpdir(), 'lock-tests-')), 'pids');
  const server = await RedisServer.start();
  process.env.LOCK_TEST_REDIS_URL = server.url;
  /** @type {{ lockTestRedis?: RedisServer }} */ (globalThis).lockTestRedis = server;
}
