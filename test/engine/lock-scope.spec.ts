import { LockLostError } from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';

describe.each(backends)('throwIfLost and await using (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let app: LockApp;
  let store: Backend;

  beforeAll(async () => {
    store = makeBackend();
    app = await bootLockApp(store.options({ keyPrefix: prefix }));
  });

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('releases a lock at the end of its `await using` scope, also when the scope throws', async () => {
    let key = '';
    {
      await using lock = await app.locks.acquire('scoped');
      key = lock.key;
      expect(await store.exists(key)).toBe(1);
    }
    expect(await store.exists(key)).toBe(0);

    const failing = async () => {
      await using lock = await app.locks.acquire('scoped');
      key = lock.key;
      throw new Error('the work failed');
    };
    await expect(failing()).rejects.toThrow('the work failed');
    expect(await store.exists(key)).toBe(0);
  });

  it('releases every key of a multi-key lock at the end of its scope', async () => {
    let keys: string[] = [];
    {
      await using lock = await app.locks.acquire(['scoped:a', 'scoped:b']);
      keys = lock.locks.map((each) => each.key);
      expect(await store.exists(...keys)).toBe(2);
    }
    expect(await store.exists(...keys)).toBe(0);
  });

  it('throws nothing while the lock is held, and LockLostError once it was released', async () => {
    const lock = await app.locks.acquire('looked-at');
    expect(() => lock.throwIfLost()).not.toThrow();
    await lock.release();
    expect(() => lock.throwIfLost()).toThrow(LockLostError);
  });

  it('throws LockLostError once the lock was found gone, with the reason its signal has', async () => {
    const lock = await app.locks.acquire('deleted', { ttl: 5_000 });
    await store.del(lock.key);
    expect(await lock.extend()).toBe(false);
    expect(() => lock.throwIfLost()).toThrow(lock.signal.reason as Error);
  });

  it('throws LockLostError once the validity of a lock nobody renews has passed', async () => {
    const lock = await app.locks.acquire('unrenewed', { ttl: 300, watchdog: false });
    expect(() => lock.throwIfLost()).not.toThrow();
    await sleep(350);
    expect(() => lock.throwIfLost()).toThrow(LockLostError);
  });

  it('throws for a multi-key lock when any of its locks is lost', async () => {
    const lock = await app.locks.acquire(['multi:a', 'multi:b'], { ttl: 5_000 });
    expect(() => lock.throwIfLost()).not.toThrow();
    await store.del(lock.locks[1].key);
    await lock.locks[1].extend();
    expect(() => lock.throwIfLost()).toThrow(LockLostError);
    await lock.release();
  });
});
