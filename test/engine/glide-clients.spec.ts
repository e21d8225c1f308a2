import type { Redis } from 'ioredis';
import type { LockModuleOptions } from '../../src/index.js';
import { until } from '../support/backends.js';
import { glideClient } from '../support/glide.js';
import {
  bootLockApp,
  rawClient,
  scriptCalls,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { valkeyServer, type RedisServer } from '../support/redis-server.js';

/** The GLIDE connections open on the server (GLIDE names its library in CLIENT SETINFO). */
async function glideConnections(redis: Redis): Promise<number> {
  const list = String(await redis.call('CLIENT', 'LIST'));
  return list.split('\n').filter((line) => line.includes('lib-name=GlideJS')).length;
}

/** Waits until the lock `key` has a subscriber on its channel: someone waits for it. */
async function untilSubscribed(redis: Redis, key: string): Promise<void> {
  await until(async () => {
    const [, count] = (await redis.call('PUBSUB', 'NUMSUB', key)) as [string, number];
    return Number(count) === 1;
  }, 10_000);
}

describe('GLIDE clients on Valkey', () => {
  let server: RedisServer;
  let monitor: Redis;
  let apps: LockApp[] = [];
  const boot = async (options: LockModuleOptions) => {
    const app = await bootLockApp(options);
    apps.push(app);
    return app;
  };
  const closeApps = async () => {
    const closing = apps;
    apps = [];
    await Promise.all(closing.map((app) => app.close()));
  };

  beforeAll(async () => {
    server = await valkeyServer();
    monitor = rawClient(server.url);
  });

  afterEach(closeApps);

  afterAll(async () => {
    await closeApps();
    await monitor.quit();
    await server.stop();
  });

  /** Holds `key` on `app`, has `waiter` wait for it, and returns what the waiter got. */
  const handOver = async (holder: LockApp, waiter: LockApp, key: string) => {
    const held = await holder.locks.acquire(key, { ttl: 60_000 });
    const waited = waiter.locks.acquire(key, { waitTimeout: 30_000 });
    await untilSubscribed(monitor, held.key);
    await held.release();
    const lock = await waited;
    await lock.release();
    return { held, lock };
  };

  it('leaves a client passed in open after app.close(), and closes the subscriber it made', async () => {
    const own = await glideClient(server.port);
    try {
      const options: LockModuleOptions = { redis: own, keyPrefix: uniquePrefix() };
      const [holder, waiter] = [await boot(options), await boot(options)];
      await handOver(holder, waiter, 'passed');
      // The user's client, and the subscriber client of the app that waited.
      expect(await glideConnections(monitor)).toBe(2);
      await closeApps();
      // GLIDE drops a closed client's connections a few seconds later, in its own thread.
      await until(async () => (await glideConnections(monitor)) === 1, 10_000);
      expect(await own.customCommand(['PING'])).toBe('PONG');
    } finally {
      own.close();
      await until(async () => (await glideConnections(monitor)) === 0, 10_000);
    }
  });

  it('closes every connection it opened from a URL', async () => {
    const options: LockModuleOptions = {
      redis: server.url,
      redisClient: 'glide',
      keyPrefix: uniquePrefix(),
    };
    const [holder, waiter] = [await boot(options), await boot(options)];
    await handOver(holder, waiter, 'url');
    // Each app's client, and the subscriber client of the app that waited.
    expect(await glideConnections(monitor)).toBe(3);
    await closeApps();
    await until(async () => (await glideConnections(monitor)) === 0, 10_000);
  });

  describe.each([
    ['GLIDE', 'ioredis'],
    ['ioredis', 'GLIDE'],
  ])('an app on %s and one on %s, sharing a key', (first, second) => {
    let holder: LockApp;
    let waiter: LockApp;

    beforeAll(async () => {
      const keyPrefix = uniquePrefix();
      const on = (client: string): LockModuleOptions =>
        client === 'GLIDE'
          ? { redis: server.url, redisClient: 'glide', keyPrefix }
          : { redis: server.url, keyPrefix };
      [holder, waiter] = [await bootLockApp(on(first)), await bootLockApp(on(second))];
    });

    afterAll(async () => {
      await Promise.all([holder?.close(), waiter?.close()]);
    });

    it('exclude each other and share the fencing counter', async () => {
      const held = await holder.locks.acquire('shared', { ttl: 60_000 });
      expect(await waiter.locks.tryAcquire('shared')).toBeNull();
      expect(await waiter.locks.isLocked('shared')).toBe(true);
      await held.release();
      const next = await waiter.locks.acquire('shared');
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await holder.locks.tryAcquire('shared')).toBeNull();
      await next.release();
    });

    it('wake the other when they release, by its notification', async () => {
      const held = await holder.locks.acquire('wake', { ttl: 60_000 });
      const waited = waiter.locks.acquire('wake', { waitTimeout: 30_000 });
      await untilSubscribed(monitor, held.key);
      await sleep(2_500);
      // Over 2.5 s the fallback re-check, backing off to once a second, made a handful of
      // attempts; woken by the release, the waiter takes the lock with one more.
      const beforeRelease = await scriptCalls(monitor);
      await held.release();
      const lock = await waited;
      expect((await scriptCalls(monitor)) - beforeRelease).toBeLessThanOrEqual(3);
      await lock.release();
    });
  });
});
