import { Redis } from 'ioredis';
import type { LockService } from '../../src/index.js';
import {
  bootLockApp,
  rawClient,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';

/**
 * A non-atomic read-modify-write of a counter in Redis: read, pause, write back + 1. Two
 * overlapping runs lose an update, so the final count proves whether exclusion held.
 */
async function unsafeIncrement(redis: Redis, counter: string): Promise<void> {
  const value = Number((await redis.get(counter)) ?? '0');
  await sleep(Math.random() * 3);
  await redis.set(counter, String(value + 1));
}

describe('mutual exclusion across LockService instances on separate connections', () => {
  const prefix = uniquePrefix();
  const apps: LockApp[] = [];
  let redis: Redis;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      apps.push(
        await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix, waitTimeout: 60_000 }),
      );
    }
    redis = rawClient(sharedRedisUrl());
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
  });

  it('the same read-modify-write loses updates without a lock (the check can fail)', async () => {
    const counter = `${prefix}counter:unlocked`;
    await Promise.all(Array.from({ length: 30 }, () => unsafeIncrement(redis, counter)));
    expect(Number(await redis.get(counter))).toBeLessThan(30);
  });

  it('loses no update when 90 concurrent callers on 3 services run it under one lock', async () => {
    const counter = `${prefix}counter:locked`;
    const callers = Array.from({ length: 90 }, (_, i) => apps[i % apps.length].locks);
    const fences: number[] = [];
    await Promise.all(
      callers.map((locks: LockService) =>
        locks.using('counter', async (lock) => {
          fences.push(lock.fencingToken);
          await unsafeIncrement(redis, counter);
        }),
      ),
    );
    expect(Number(await redis.get(counter))).toBe(90);
    expect(fences).toEqual([...fences].sort((a, b) => a - b));
    expect(new Set(fences).size).toBe(90);
  });
});
