import { LockKindError, type LockService } from '../../src/index.js';
import { backends, withLockApps } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';
import { crowdSemaphore, semaphoreInOrder } from '../support/kind-scenarios.js';

describe.each(backends)('counting semaphores (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  const context = withLockApps(3, makeBackend, { keyPrefix: prefix, waitTimeout: 60_000 });
  const { apps } = context;
  const keyOf = (name: string) => prefix + name;

  it('never lets more than `limit` callers in at once, and lets that many in', async () => {
    const { most, fences } = await crowdSemaphore(apps, 'api', 4, 60);
    expect(most).toBe(4);
    // Each permit has a fencing token of its own.
    expect(new Set(fences).size).toBe(60);
    // Nothing is left behind: no marker, no holders, no queue.
    expect(await context.store.exists(keyOf('api'))).toBe(0);
    expect(await context.store.holderCount(keyOf('api'))).toBe(0);
    expect(await context.store.lineLength(keyOf('api'))).toBe(0);
  });

  it('serves waiters of every instance in the order they came', async () => {
    // Each permit given back goes to the longest-waiting caller, whichever instance it is in.
    const seen = await semaphoreInOrder(apps, 'fifo', [1, 2, 0, 1], () =>
      context.store.lineLength(keyOf('fifo')),
    );
    expect(seen).toEqual([[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]);
  });

  it('gives each permit the mutex handle: watchdog, extend, release, signal on loss', async () => {
    const lock = await apps[0].locks.acquire('handle', { limit: 3, ttl: 200 });
    const other = await apps[1].locks.acquire('handle', { limit: 3, ttl: 200 });
    expect(lock.token).not.toBe(other.token);
    expect(other.fencingToken).toBeGreaterThan(lock.fencingToken);
    // The watchdog keeps both alive well past their TTL.
    await sleep(600);
    expect(lock.signal.aborted).toBe(false);
    expect(await context.store.holderCount(lock.key)).toBe(2);
    expect(await lock.extend(5_000)).toBe(true);
    expect(await context.store.pttl(lock.key)).toBeGreaterThan(200);
    expect(await other.release()).toBe(true);
    expect(await other.release()).toBe(false);
    expect(await other.extend()).toBe(false);
    // Taken from under it (the store lost it): the signal says so.
    await context.store.del(lock.key);
    const reason = await new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
    );
    expect(String(reason)).toMatch(/LockLostError/);
    expect(await lock.release()).toBe(false);
  });

  it('refuses a caller that asks for another limit, or another kind, naming both', async () => {
    const lock = await apps[0].locks.acquire('kinds', { limit: 3 });
    await expect(apps[1].locks.acquire('kinds', { limit: 2 })).rejects.toThrow(
      new LockKindError('kinds', 'a semaphore of limit 3', 'a semaphore of limit 2'),
    );
    await expect(apps[1].locks.tryAcquire('kinds', { mode: 'read' })).rejects.toBeInstanceOf(
      LockKindError,
    );
    // A mutex caller finds the key taken, and gets it once the permits are all back.
    expect(await apps[1].locks.tryAcquire('kinds')).toBeNull();
    const mutex = apps[1].locks.acquire('kinds');
    await sleep(50);
    await lock.release();
    const held = await mutex;
    await expect(apps[2].locks.tryAcquire('kinds', { limit: 3 })).rejects.toThrow(
      /held as a mutex, but this caller asked for a semaphore of limit 3/,
    );
    await held.release();
  });

  it('lets work nested in a permit reuse it, and refuses a mutex inside one', async () => {
    const locks: LockService = apps[0].locks;
    await locks.using(
      'nested',
      async (outer) => {
        const inner = await locks.using('nested', (lock) => lock, { limit: 2 });
        expect(inner.token).toBe(outer.token);
        expect(await context.store.holderCount(outer.key)).toBe(1);
        await expect(locks.using('nested', () => 1)).rejects.toBeInstanceOf(LockKindError);
      },
      { limit: 2 },
    );
  });
});
