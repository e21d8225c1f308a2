import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { LockLostError, type Lock } from '../../src/index.js';
import { RedisServer } from '../support/redis-server.js';
import {
  aborted,
  bootLockApp,
  rawClient,
  scriptCalls,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { backends, type Backend } from '../support/backends.js';
import { holderIn } from '../support/lock-value.js';

const IDLE_HOLDER = fileURLToPath(new URL('../support/idle-holder-process.mjs', import.meta.url));

describe.each(backends)('watchdog (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let app: LockApp;
  let other: LockApp;
  let store: Backend;

  beforeAll(async () => {
    store = makeBackend();
    app = await bootLockApp(store.options({ keyPrefix: prefix }));
    other = await bootLockApp(store.options({ keyPrefix: prefix }));
  });

  afterAll(async () => {
    await Promise.all([app.close(), other.close()]);
    await store.close();
  });

  it('keeps a lock alive far past its TTL while it is held', async () => {
    const lock = await app.locks.acquire('long-job', { ttl: 150 });
    await sleep(1_200);
    expect(lock.signal.aborted).toBe(false);
    expect(holderIn(await store.get(lock.key))).toBe(lock.token);
    expect(await other.locks.tryAcquire('long-job')).toBeNull();
    expect(await lock.release()).toBe(true);
  });

  it('lets a lock without the watchdog expire after its TTL, freeing it for others', async () => {
    const lock = await app.locks.acquire('crashed', { ttl: 200, watchdog: false });
    const started = performance.now();
    const successor = await other.locks.acquire('crashed', { waitTimeout: 5_000 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(await aborted(lock)).toBeInstanceOf(LockLostError);
    expect(successor.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(await lock.release()).toBe(false);
    expect(holderIn(await store.get(successor.key))).toBe(successor.token);
    await successor.release();
  });

  it('release never deletes the lock of the next holder', async () => {
    const first = await app.locks.acquire('stale', { ttl: 100, watchdog: false });
    await sleep(150);
    const second = await other.locks.acquire('stale', { ttl: 10_000 });
    expect(await first.release()).toBe(false);
    expect(holderIn(await store.get(second.key))).toBe(second.token);
    expect(await second.release()).toBe(true);
  });

  it('aborts lock.signal with LockLostError when the lock is deleted behind its back', async () => {
    const lock = await app.locks.acquire('deleted', { ttl: 300 });
    await store.del(lock.key);
    const reason = await aborted(lock);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).key).toBe('deleted');
    expect(await lock.release()).toBe(false);
  });

  it('aborts lock.signal when another owner replaced the token, and leaves that owner alone', async () => {
    const lock = await app.locks.acquire('replaced', { ttl: 300 });
    await store.set(lock.key, 'intruder', 10_000);
    expect(await aborted(lock)).toBeInstanceOf(LockLostError);
    expect(await store.get(lock.key)).toBe('intruder');
    await store.del(lock.key);
  });
});

describe('watchdog batching (on a Redis of its own, so that command counts are exact)', () => {
  let server: RedisServer;
  let app: LockApp;
  let monitor: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    app = await bootLockApp({ redis: server.url });
    monitor = rawClient(server.url);
  });

  afterAll(async () => {
    await app.close();
    await monitor.quit();
    await server.stop();
  });

  it('renews all held locks with one script call per tick, not one per lock', async () => {
    const locks = await Promise.all(
      Array.from({ length: 50 }, (_, i) => app.locks.acquire(`batch:${i}`, { ttl: 600 })),
    );
    const before = await scriptCalls(monitor);
    await sleep(1_000);
    const renewalCalls = (await scriptCalls(monitor)) - before;
    // 50 locks for 1 s at ttl 600 ms is about 5 renewal rounds (every ttl/3, coalesced): one
    // call per lock and round would be about 250.
    expect(renewalCalls).toBeGreaterThanOrEqual(2);
    expect(renewalCalls).toBeLessThanOrEqual(12);
    expect(locks.every((lock) => !lock.signal.aborted)).toBe(true);
    await Promise.all(locks.map((lock) => lock.release()));
  });

  describe('a Redis that pauses while hundreds of locks are due (five requests of renewals)', () => {
    const COUNT = 600;
    const pause = async (ms: number) => {
      process.kill(server.pid!, 'SIGSTOP');
      try {
        await sleep(ms);
      } finally {
        process.kill(server.pid!, 'SIGCONT');
      }
    };
    const acquireAll = (name: string, ttl: number) =>
      Promise.all(
        Array.from({ length: COUNT }, (_, i) => app.locks.acquire(`${name}:${i}`, { ttl })),
      );
    /** The locks whose key in Redis no longer holds their token. */
    const goneFromRedis = async (locks: Lock[]) => {
      const values = await monitor.mget(...locks.map((lock) => lock.key));
      return locks.filter((lock, i) => holderIn(values[i]) !== lock.token);
    };

    it('keeps every lock through a pause shorter than what the validity has left at a renewal', async () => {
      // Renewals every second; a lock renewed just before the pause has about 2 s left.
      const locks = await acquireAll('short-pause', 3_000);
      await pause(1_200);
      // Past the renewals that the pause held up, and the next ones.
      await sleep(1_500);
      expect(locks.filter((lock) => lock.signal.aborted)).toEqual([]);
      expect(await goneFromRedis(locks)).toEqual([]);
      await Promise.all(locks.map((lock) => lock.release()));
    });

    it('ends every lock, none left believed held without its key, when the pause outlasts the TTL', async () => {
      const locks = await acquireAll('long-pause', 900);
      await pause(2_000);
      const reasons = await Promise.all(locks.map(aborted));
      expect(reasons.filter((reason) => !(reason instanceof LockLostError))).toEqual([]);
      // And the keys are free for others: no renewal that came through late put one back.
      expect(await goneFromRedis(locks)).toHaveLength(COUNT);
      expect((await Promise.all(locks.map((lock) => lock.release()))).some(Boolean)).toBe(false);
    });
  });
});

describe('watchdog in a process that does nothing else (memory store)', () => {
  it('keeps 1,000 locks alive across several TTLs, renewed in many requests', async () => {
    // More locks than one renewal request takes: the rest follow turn by turn, and must not
    // wait for something else to wake the event loop, as nothing else does here (the memory
    // store answers without I/O, and the process waits on one timer).
    const child = fork(IDLE_HOLDER, [], {
      execArgv: [],
      stdio: 'inherit',
      env: { ...process.env, LOCK_COUNT: '1000', LOCK_TTL: '600', IDLE_MS: '2000' },
    });
    const [report] = (await once(child, 'message')) as [{ held: number; lost: number }];
    await once(child, 'exit');
    expect(report).toEqual({ held: 1_000, lost: 0 });
  });
});
