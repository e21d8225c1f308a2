import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { bootLockApp, rawClient, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { startWaitingProcess, type WaitingProcessOptions } from '../support/waiting-child.js';

/**
 * Semaphore permits and read-write shares of processes that stop (SIGKILL, so nothing is given
 * back): a holder's permit comes back after its TTL, a dead waiter costs the others about its
 * queue lease or the handover lease, never its TTL.
 */
describe('semaphores and read-write locks of processes that stop', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: LockApp;
  const children = new Set<ChildProcess>();
  const prefix = uniquePrefix();

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
    app = await bootLockApp({ redis: server.url, keyPrefix: prefix });
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await app.close();
    await redis.quit();
    await server.stop();
  });

  async function holdInChild(key: string, options: WaitingProcessOptions): Promise<ChildProcess> {
    const child = startWaitingProcess(server.url, prefix, key, options);
    children.add(child);
    const [message] = (await once(child, 'message')) as [{ booted?: boolean }];
    expect(message.booted).toBe(true);
    return child;
  }

  async function kill(child: ChildProcess): Promise<void> {
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    children.delete(child);
  }

  it('gives the permits of holders that stop back after their TTL', async () => {
    const holders = await Promise.all([
      holdInChild('api', { ttl: 1_500, limit: 2 }),
      holdInChild('api', { ttl: 1_500, limit: 2 }),
    ]);
    await Promise.all(holders.map((child) => once(child, 'message')));
    await Promise.all(holders.map(kill));
    // Both permits are still taken: nothing gave them back.
    expect(await app.locks.tryAcquire('api', { limit: 2 })).toBeNull();
    expect(await redis.zcard(sideKeyOf(`${prefix}api`, 'holders'))).toBe(2);
    const locks = await Promise.all([
      app.locks.acquire('api', { limit: 2, waitTimeout: 20_000 }),
      app.locks.acquire('api', { limit: 2, waitTimeout: 20_000 }),
    ]);
    expect(await redis.zcard(sideKeyOf(`${prefix}api`, 'holders'))).toBe(2);
    await Promise.all(locks.map((lock) => lock.release()));
    expect(await redis.exists(`${prefix}api`, sideKeyOf(`${prefix}api`, 'holders'))).toBe(0);
  }, 30_000);

  it('lets readers in after the TTL of a writer that stopped', async () => {
    const writer = await holdInChild('doc', { ttl: 1_500, mode: 'write' });
    await once(writer, 'message');
    await kill(writer);
    expect(await app.locks.tryAcquire('doc', { mode: 'read' })).toBeNull();
    const lock = await app.locks.acquire('doc', { mode: 'read', waitTimeout: 20_000 });
    await lock.release();
  }, 30_000);

  it('costs the others little when a waiter stops, however long the TTL it asked for', async () => {
    const held = await app.locks.acquire('queue', { mode: 'read', ttl: 60_000 });
    // A writer with a one-minute TTL queues in another process, and dies there.
    const dead = await holdInChild('queue', { ttl: 60_000, mode: 'write' });
    const line = sideKeyOf(`${prefix}queue`, 'line');
    while ((await redis.zcard(line)) === 0) await sleep(5);
    // Behind it, a writer of this process; the dead one's turn comes first.
    const next = app.locks.acquire('queue', { mode: 'write', waitTimeout: 20_000 });
    while ((await redis.zcard(line)) < 2) await sleep(5);
    await kill(dead);
    await held.release();
    // Served within the jest timeout, far below the dead writer's 60 s TTL.
    const lock = await next;
    await lock.release();
  }, 30_000);
});
