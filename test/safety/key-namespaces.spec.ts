import { LockKeyResolutionError, StaleFencingTokenError } from '../../src/index.js';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { backends, type Backend } from '../support/backends.js';
import { bootLockApp, uniquePrefix, type LockApp } from '../support/lock-app.js';

/**
 * A fenced resource is a key the caller names: each of these names tries to reach a key the
 * library keeps for a lock, or another resource's guard, as an adversarial caller would.
 */
describe.each(backends)(
  'writeFenced cannot reach the keys of locks or guards (%s store)',
  (_, makeBackend) => {
    const prefix = uniquePrefix();
    let store: Backend;
    let app: LockApp;
    let other: LockApp;
    /** A real fencing token, so that only the resource's name is wrong. */
    let token: number;

    beforeAll(async () => {
      store = makeBackend();
      app = await bootLockApp(store.options({ keyPrefix: prefix }));
      other = await bootLockApp(store.options({ keyPrefix: prefix }));
      const lock = await app.locks.acquire('token');
      token = lock.fencingToken;
      await lock.release();
    });

    afterAll(async () => {
      await Promise.all([app.close(), other.close()]);
      await store.close();
    });

    /** The refused writes: each resource, and the value it would hold had the write gone through. */
    const attempted: [string, string][] = [];
    const refused = (resource: string, value = `poison:${prefix}`) => {
      attempted.push([resource, value]);
      return expect(app.locks.writeFenced(resource, value, token)).rejects.toBeInstanceOf(
        LockKeyResolutionError,
      );
    };

    it("refuses a lock's queue as a resource, which would break the lock for good", async () => {
      await refused(`{${prefix}order:1}:queue`);
      await refused(`{${prefix}order:1}:waiters`);
      await refused(`{user:1}:queue:${prefix}{user:1}:cart`);
      await refused(sideKeyOf(`${prefix}{user:1}:cart`, 'queue'));
      // With a queue made a string, every later acquisition would fail with WRONGTYPE.
      const held = await app.locks.acquire('order:1');
      const waiting = other.locks.acquire('order:1', { waitTimeout: 5_000 });
      await held.release();
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      await next.release();
      const last = await app.locks.acquire('order:1');
      expect(last.fencingToken).toBeGreaterThan(next.fencingToken);
      await last.release();
    });

    it('refuses a fencing counter as a resource, which would stop tokens from growing', async () => {
      await refused(`{${prefix}order:2}:fence`, String(10 * 2 ** 53));
      await refused('{}:fence', String(10 * 2 ** 53));
      await refused(`{${prefix}}:fence`, String(10 * 2 ** 53));
      const first = await app.locks.acquire('order:2');
      await first.release();
      const second = await app.locks.acquire('order:2');
      await second.release();
      expect(Number.isSafeInteger(second.fencingToken)).toBe(true);
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    });

    it("refuses another resource's guard, which would let a stale holder write", async () => {
      const resource = `data:${prefix}acct`;
      const stale = await app.locks.acquire('acct', { ttl: 50, watchdog: false });
      const fresh = await other.locks.acquire('acct', { waitTimeout: 5_000 });
      await other.locks.writeFenced(resource, 'balance=90', fresh.fencingToken);
      // The stale holder resets the guard, then writes what it computed before its lock expired.
      await refused(`{${resource}}:fenced`, '0');
      await expect(
        app.locks.writeFenced(resource, 'balance=100', stale.fencingToken),
      ).rejects.toBeInstanceOf(StaleFencingTokenError);
      expect(await store.readFenced(resource)).toBe('balance=90');
      await fresh.release();
    });

    it('wrote none of the refused keys', async () => {
      expect(attempted.length).toBeGreaterThan(5);
      for (const [resource, value] of attempted) {
        expect([resource, await store.readFenced(resource)]).not.toEqual([resource, value]);
      }
    });
  },
);
