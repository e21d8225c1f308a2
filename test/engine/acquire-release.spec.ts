import {
  LockKeyResolutionError,
  LockNotAcquiredError,
  LockOptionsError,
  type Lock,
} from '../../src/index.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { backends, type Backend } from '../support/backends.js';
import { holderIn } from '../support/lock-value.js';

describe.each(backends)(
  'acquire, tryAcquire, release, extend, isLocked (%s store)',
  (_, makeBackend) => {
    const prefix = uniquePrefix();
    let app: LockApp;
    let store: Backend;

    beforeAll(async () => {
      store = makeBackend();
      app = await bootLockApp(store.options({ keyPrefix: prefix, waitTimeout: 2_000 }));
    });

    afterAll(async () => {
      await app.close();
      await store.close();
    });

    it('stores a 128-bit random token under keyPrefix + key with the TTL, and deletes it on release', async () => {
      const lock = await app.locks.acquire('order:1', { ttl: 5_000 });
      expect(lock.key).toBe(`${prefix}order:1`);
      expect(lock.token).toMatch(/^[0-9a-f]{32}@/);
      expect(holderIn(await store.get(lock.key))).toBe(lock.token);
      const pttl = await store.pttl(lock.key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(5_000);
      expect(await app.locks.isLocked('order:1')).toBe(true);

      expect(await lock.release()).toBe(true);
      expect(await store.exists(lock.key)).toBe(0);
      expect(await app.locks.isLocked('order:1')).toBe(false);
    });

    it('gives every acquisition a different token', async () => {
      const tokens = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const lock = await app.locks.acquire('tokens');
        tokens.add(lock.token);
        await lock.release();
      }
      expect(tokens.size).toBe(20);
    });

    it('tryAcquire returns null while the lock is held, and the lock once it is free', async () => {
      const held = await app.locks.acquire('try');
      expect(await app.locks.tryAcquire('try')).toBeNull();
      await held.release();
      const lock = await app.locks.tryAcquire('try');
      expect(lock).not.toBeNull();
      await lock!.release();
    });

    it('acquire with waitTimeout 0 fails at once with LockNotAcquiredError naming the key', async () => {
      const held = await app.locks.acquire('busy', { ttl: 8_000 });
      const error = await app.locks.acquire('busy', { waitTimeout: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error).toMatchObject({ key: 'busy', waitedMs: 0 });
      expect((error as LockNotAcquiredError).holderTtlMs).toBeGreaterThan(0);
      // The holder may release at any moment: no retry time is known.
      expect((error as LockNotAcquiredError).retryAfterMs).toBeUndefined();
      expect((error as Error).message).not.toContain(held.token);
      await held.release();
    });

    it('acquire gives up after waitTimeout with LockNotAcquiredError saying how long it waited', async () => {
      const held = await app.locks.acquire('slow', { ttl: 8_000 });
      const error = await app.locks.acquire('slow', { waitTimeout: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).waitedMs).toBeGreaterThanOrEqual(299);
      expect((error as Error).message).toMatch(/"slow".*waiting \d+ ms/);
      expect(holderIn(await store.get(held.key))).toBe(held.token);
      await held.release();
    });

    it('release returns false the second time', async () => {
      const lock = await app.locks.acquire('twice');
      expect(await lock.release()).toBe(true);
      expect(await lock.release()).toBe(false);
    });

    it('extend is a compare-and-pexpire that resets the TTL', async () => {
      const lock = await app.locks.acquire('extend', { ttl: 1_000, watchdog: false });
      expect(await lock.extend(20_000)).toBe(true);
      expect(await store.pttl(lock.key)).toBeGreaterThan(10_000);
      await store.set(lock.key, 'someone-else');
      expect(await lock.extend(20_000)).toBe(false);
      expect(await store.get(lock.key)).toBe('someone-else');
      expect(lock.signal.aborted).toBe(true);
      await store.del(lock.key);
    });

    it('extend after the lock ended returns false', async () => {
      const lock = await app.locks.acquire('extend-after-release');
      await lock.release();
      expect(await lock.extend()).toBe(false);
    });

    it('rejects bad keys before touching Redis', async () => {
      const bad: unknown[] = ['', 42, undefined, 'x'.repeat(1025), 'a}b'];
      for (const key of bad) {
        await expect(app.locks.acquire(key as string)).rejects.toBeInstanceOf(
          LockKeyResolutionError,
        );
      }
      await expect(app.locks.isLocked('')).rejects.toBeInstanceOf(LockKeyResolutionError);
    });

    it('accepts keys with a hash tag', async () => {
      const lock: Lock = await app.locks.acquire('{user:1}:cart');
      expect(lock.key).toBe(`${prefix}{user:1}:cart`);
      expect(await lock.release()).toBe(true);
    });

    it('rejects bad per-call options with LockOptionsError naming the option', async () => {
      const cases: [object, string][] = [
        [{ ttl: -1 }, 'ttl'],
        [{ ttl: 1.5 }, 'ttl'],
        [{ ttl: Number.NaN }, 'ttl'],
        [{ ttl: Infinity }, 'ttl'],
        [{ ttl: '30s' }, 'ttl'],
        [{ waitTimeout: -5 }, 'waitTimeout'],
        [{ watchdog: 'yes' }, 'watchdog'],
        [{ tll: 100 }, 'tll'],
      ];
      for (const [options, name] of cases) {
        const error = await app.locks.acquire('opts', options).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockOptionsError);
        expect((error as LockOptionsError).option).toBe(name);
      }
      expect(await app.locks.isLocked('opts')).toBe(false);
    });

    it('waits for a held lock and gets it once the holder releases', async () => {
      const held = await app.locks.acquire('handoff', { ttl: 10_000 });
      const waiting = app.locks.acquire('handoff', { waitTimeout: 5_000 });
      await sleep(100);
      await held.release();
      const lock = await waiting;
      expect(holderIn(await store.get(lock.key))).toBe(lock.token);
      await lock.release();
    });

    it('serves the waiters of one process in arrival order, even against a holder that asks again', async () => {
      const order: string[] = [];
      const held = await app.locks.acquire('fifo', { ttl: 10_000 });
      const waiting = ['b', 'c', 'd'].map(async (name, i) => {
        await sleep(10 * i);
        const lock = await app.locks.acquire('fifo', { waitTimeout: 5_000 });
        order.push(name);
        await lock.release();
      });
      await sleep(50);
      await held.release();
      const again = await app.locks.acquire('fifo', { waitTimeout: 5_000 });
      order.push('a again');
      await again.release();
      await Promise.all(waiting);
      expect(order).toEqual(['b', 'c', 'd', 'a again']);
    });
  },
);
