import type { Redis } from 'ioredis';
import { LockConnectionError, type AcquireOptions } from '../../src/index.js';
import { processSpace } from '../../src/store/memory/memory-space.js';
import { bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';

/** Runs `lockOnce(i)` for every i in [from, to), `parallel` at a time. */
async function forEachKey(
  from: number,
  to: number,
  lockOnce: (i: number) => Promise<unknown>,
  parallel = 50,
): Promise<void> {
  let next = from;
  const worker = async () => {
    while (next < to) await lockOnce(next++);
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

describe('what stays in Redis after every lock is released', () => {
  let server: RedisServer;
  let redis: Redis;
  const apps: LockApp[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
    for (let i = 0; i < 4; i++) apps.push(await bootLockApp({ redis: server.url }));
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
    await server.stop();
  });

  it('is one fencing counter, however many distinct keys were locked', async () => {
    const [app] = apps;
    const lockOnce = (i: number) => app.locks.using(`request:${i}`, () => undefined);
    await forEachKey(0, 5_000, lockOnce);
    const after5k = await redis.dbsize();
    await forEachKey(5_000, 15_000, lockOnce);
    expect({ after5k, after15k: await redis.dbsize() }).toEqual({ after5k: 1, after15k: 1 });
    expect(await redis.keys('*')).toEqual(['{lock:}:fence']);
    // 15,000 locks: a loaded machine needs more than the suite's default of 30 s for them.
  }, 300_000);

  it('leaves no queue once the last waiter is served or gives up', async () => {
    const [holder, first, second, impatient] = apps;
    const keys = Array.from({ length: 50 }, (_, i) => `queued:${i}`);
    const held = await Promise.all(keys.map((key) => holder.locks.acquire(key)));
    const served = keys.flatMap((key) =>
      [first, second].map((app) => app.locks.using(key, () => sleep(1), { waitTimeout: 20_000 })),
    );
    const gaveUp = keys.map((key) =>
      impatient.locks.acquire(key, { waitTimeout: 1_000 }).catch((error: unknown) => error),
    );
    // Every key has its three waiters queued in Redis meanwhile.
    const queued = () => Promise.all(keys.map((key) => redis.zcard(`{lock:${key}}:queue`)));
    while ((await queued()).some((waiters) => waiters < 3)) await sleep(10);
    await Promise.all(gaveUp);
    await Promise.all(held.map((lock) => lock.release()));
    await Promise.all(served);
    expect(await redis.keys('*')).toEqual(['{lock:}:fence']);
  });
});

describe('what stays in the memory store', () => {
  let app: LockApp;
  /** Entries in all the maps of the process's memory store. */
  const entries = () =>
    Object.values(processSpace).reduce(
      (sum: number, field: unknown) => sum + (field instanceof Map ? field.size : 0),
      0,
    );

  beforeAll(async () => {
    app = await bootLockApp({ store: 'memory' });
  });

  afterAll(() => app.close());

  it('is nothing per key once its locks are released', async () => {
    const before = entries();
    const lockOnce = (i: number) => app.locks.using(`request:${i}`, () => undefined);
    await forEachKey(0, 5_000, lockOnce);
    const after5k = entries();
    await forEachKey(5_000, 15_000, lockOnce);
    expect([after5k, entries()]).toEqual([before, before]);
  });

  /** In batches that expire before the next one starts: at most 500 live entries at a time. */
  const inExpiringBatches = async (from: number, to: number, add: (i: number) => Promise<void>) => {
    for (let batch = from; batch < to; batch += 500) {
      await forEachKey(batch, batch + 500, add);
      await sleep(50);
    }
  };

  it('stays within a bound when locks expire instead of being released', async () => {
    const expiring = async (i: number) => {
      // On a busy machine an answer may come after so short a TTL: the lock is then given back.
      await app.locks
        .acquire(`expiring:${i}`, { ttl: 20, watchdog: false })
        .catch((error: unknown) => expect(error).toBeInstanceOf(LockConnectionError));
    };
    await inExpiringBatches(0, 5_000, expiring);
    const after5k = processSpace.locks.size;
    await inExpiringBatches(5_000, 15_000, expiring);
    // Swept whenever a map doubles past 1,024 entries: at most twice that while few live.
    expect(after5k).toBeLessThanOrEqual(2_048);
    expect(processSpace.locks.size).toBeLessThanOrEqual(2_048);
  }, 120_000);

  it.each([
    ['a semaphore', 'semaphore', { limit: 3 }],
    ['a read-write lock', 'rw', { mode: 'read' }],
  ] as [string, string, AcquireOptions][])(
    'stays within a bound when permits of %s expire instead of being released',
    async (_, name, kind) => {
      const expiring = async (i: number) => {
        await app.locks
          .acquire(`expiring-${name}:${i}`, {
            ...kind,
            ttl: 20,
            watchdog: false,
          })
          .catch((error: unknown) => expect(error).toBeInstanceOf(LockConnectionError));
      };
      await inExpiringBatches(0, 5_000, expiring);
      const after5k = processSpace.holders.size;
      await inExpiringBatches(5_000, 15_000, expiring);
      expect(after5k).toBeLessThanOrEqual(2_048);
      expect(processSpace.holders.size).toBeLessThanOrEqual(2_048);
      expect(processSpace.locks.size).toBeLessThanOrEqual(2_048);
    },
    120_000,
  );

  it('stays within a bound for fenced values that expire', async () => {
    const writer = await app.locks.acquire('writer');
    const write = (i: number) =>
      app.locks.writeFenced(`expiring:${i}`, 'value', writer.fencingToken, { ttl: 20 });
    await inExpiringBatches(0, 5_000, write);
    const after5k = processSpace.values.size;
    await inExpiringBatches(5_000, 15_000, write);
    expect(after5k).toBeLessThanOrEqual(2_048);
    expect(processSpace.values.size).toBeLessThanOrEqual(2_048);
    await writer.release();
  });
});
