import { RedisServer } from '../support/redis-server.js';
import { bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import type { Redis } from 'ioredis';

describe('waiting for a held lock', () => {
  let server: RedisServer;
  let holder: LockApp;
  let waiter: LockApp;
  let monitor: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    holder = await bootLockApp({ redis: server.url });
    waiter = await bootLockApp({ redis: server.url });
    monitor = rawClient(server.url);
  });

  afterAll(async () => {
    await Promise.all([holder.close(), waiter.close()]);
    await monitor.quit();
    await server.stop();
  });

  const attempts = async () => {
    const info = await monitor.info('commandstats');
    return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
  };

  it('is woken by the release notification, not by polling', async () => {
    const held = await holder.locks.acquire('job', { ttl: 60_000 });
    const waited = waiter.locks.acquire('job', { waitTimeout: 30_000 });
    await sleep(2_500);
    // Over 2.5 s the fallback re-check, backing off to once a second, made a handful of
    // attempts; a poller at the seeds' 50 ms would have made about 50.
    const beforeRelease = await attempts();
    await held.release();
    const lock = await waited;
    const afterAcquire = await attempts();
    expect(afterAcquire - beforeRelease).toBeLessThanOrEqual(3);
    expect(await monitor.pubsub('NUMSUB', held.key)).toEqual([held.key, 0]);
    await lock.release();
  });

  it('subscribes once per process and key, however many callers wait', async () => {
    const held = await holder.locks.acquire('crowd', { ttl: 60_000 });
    const waiting = Array.from({ length: 20 }, () =>
      waiter.locks.using('crowd', () => sleep(1), { waitTimeout: 30_000 }),
    );
    await sleep(200);
    expect(await monitor.pubsub('NUMSUB', held.key)).toEqual([held.key, 1]);
    const before = await attempts();
    await held.release();
    await Promise.all(waiting);
    // 20 handoffs: each costs an acquire and a release, with few wasted attempts, because only
    // the head of the local queue asks Redis.
    expect((await attempts()) - before).toBeLessThanOrEqual(20 * 2 + 10);
  });
});
