import type { Redis } from 'ioredis';
import type { LockModuleOptions } from '../../src/index.js';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { until } from '../support/backends.js';
import { LockProcess } from '../support/lock-child.js';
import { rawClient, sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

/**
 * An app on ioredis and an app on node-redis, each in a process of its own, on one Redis: the
 * same keys, scripts, fencing counter and notifications, so they share every lock.
 */
describe('apps on different Redis clients', () => {
  let prefix: string;
  let raw: Redis;
  let onIoRedis: LockProcess;
  let onNodeRedis: LockProcess;

  beforeAll(async () => {
    prefix = uniquePrefix();
    raw = rawClient(sharedRedisUrl());
    const options = (redisClient: LockModuleOptions['redisClient']): LockModuleOptions => ({
      redis: sharedRedisUrl(),
      redisClient,
      keyPrefix: prefix,
    });
    [onIoRedis, onNodeRedis] = await Promise.all([
      LockProcess.start(options('ioredis')),
      LockProcess.start(options('node-redis')),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([onIoRedis?.close(), onNodeRedis?.close()]);
    const keys = await raw.keys(`*${prefix}*`);
    if (keys.length > 0) await raw.del(...keys);
    await raw.quit();
  });

  it('exclude each other: no update of a shared counter is lost, and fencing tokens grow across both', async () => {
    const counter = `${prefix}tally`;
    const tokens: number[] = [];
    const worker = async (app: LockProcess) => {
      for (let round = 0; round < 15; round++) {
        const lock = await app.acquire('counter', { waitTimeout: 20_000 });
        tokens.push(lock.fencingToken);
        // A read-modify-write that loses an update whenever two holders overlap.
        const value = Number(await raw.get(counter));
        await sleep(1);
        await raw.set(counter, String(value + 1));
        expect(await lock.release()).toBe(true);
      }
    };
    await Promise.all([onIoRedis, onNodeRedis, onIoRedis, onNodeRedis].map(worker));
    expect(Number(await raw.get(counter))).toBe(60);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  }, 60_000);

  it.each([
    ['ioredis', 'node-redis'],
    ['node-redis', 'ioredis'],
  ])(
    'wake each other: a waiter on %s gets the lock the moment a holder on %s lets it go',
    async (waiterClient) => {
      const [waiterApp, holderApp] =
        waiterClient === 'ioredis' ? [onIoRedis, onNodeRedis] : [onNodeRedis, onIoRedis];
      const key = `wake:${waiterClient}`;
      // Held far longer than the waiter waits: only the release's notice can let it in.
      const held = await holderApp.acquire(key, { ttl: 60_000 });
      const waited = waiterApp.acquire(key, { waitTimeout: 20_000 });
      waited.catch(() => undefined);
      const queue = sideKeyOf(`${prefix}${key}`, 'queue');
      await until(async () => (await raw.zcard(queue)) === 1, 10_000);
      // The waiter listens on the channel that the holder's release publishes to (its
      // subscription may be confirmed a moment after it joined the line).
      const listeners = async () => {
        const [, count] = (await raw.pubsub('NUMSUB', `${prefix}${key}`)) as [string, number];
        return Number(count);
      };
      await until(async () => (await listeners()) === 1, 10_000);
      expect(await held.release()).toBe(true);
      const lock = await waited;
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await lock.release()).toBe(true);
    },
  );
});
