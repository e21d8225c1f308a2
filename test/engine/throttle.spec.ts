import { LockNotAcquiredError, LockOptionsError } from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { holderIn } from '../support/lock-value.js';

/**
 * Windows that the specs check from outside (the key still there, its PTTL within the window)
 * last seconds, not tenths: a loaded machine can stall a test for most of a second between the
 * call that opens a window and the read that checks it.
 */
const WINDOW = 3_000;

describe.each(backends)('holdFor on acquire and using (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let first: LockApp;
  let second: LockApp;
  let store: Backend;

  beforeAll(async () => {
    store = makeBackend();
    first = await bootLockApp(store.options({ keyPrefix: prefix }));
    second = await bootLockApp(store.options({ keyPrefix: prefix }));
  });

  afterAll(async () => {
    await Promise.all([first.close(), second.close()]);
    await store.close();
  });

  it('using keeps the key until holdFor after the acquire; others are throttled meanwhile', async () => {
    await first.locks.using('report', () => sleep(50), { holdFor: WINDOW });
    expect(await store.exists(`${prefix}report`)).toBe(1);
    expect(await store.pttl(`${prefix}report`)).toBeLessThanOrEqual(WINDOW);
    const early = await second.locks
      .using('report', () => 'ran', { holdFor: WINDOW, waitTimeout: 0 })
      .catch((error: unknown) => error);
    expect(early).toBeInstanceOf(LockNotAcquiredError);
    const throttled = early as LockNotAcquiredError;
    expect(throttled.throttled).toBe(true);
    expect(throttled.retryAfterMs).toBeGreaterThan(0);
    expect(throttled.retryAfterMs).toBeLessThanOrEqual(WINDOW);
    while (await store.exists(`${prefix}report`)) await sleep(20);
    await expect(second.locks.using('report', () => 'ran', { holdFor: 600 })).resolves.toBe('ran');
  });

  it('release() of an acquired lock leaves it to the end of its window, and says it was ours', async () => {
    const lock = await first.locks.acquire('submit', { holdFor: WINDOW, ttl: 10_000 });
    expect(await lock.release()).toBe(true);
    expect(holderIn(await store.get(lock.key))).toBe(lock.token);
    const pttl = await store.pttl(lock.key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(WINDOW);
    expect(await lock.release()).toBe(false);
    // Not renewed any more: it ends with its window.
    while (await store.exists(lock.key)) await sleep(20);
  });

  it('a waiter granted late keeps the key until holdFor after its grant, not after it began waiting', async () => {
    const holdFor = WINDOW;
    const holder = await first.locks.acquire('queued');
    const waiting = second.locks.acquire('queued', { holdFor, waitTimeout: 30_000 });
    await sleep(holdFor + 400);
    const releasedAt = performance.now();
    await holder.release();
    const lock = await waiting;
    expect(await lock.release()).toBe(true);
    expect(holderIn(await store.get(lock.key))).toBe(lock.token);
    expect(await store.pttl(lock.key)).toBeGreaterThan(0);
    expect(await store.pttl(lock.key)).toBeLessThanOrEqual(holdFor);
    while (await store.exists(lock.key)) await sleep(5);
    // Granted by an attempt sent after the first holder's release was.
    expect(performance.now() - releasedAt).toBeGreaterThanOrEqual(holdFor);
  });

  it('deletes at once a lock whose window has passed when it is released', async () => {
    const lock = await first.locks.acquire('late', { holdFor: 50 });
    await sleep(100);
    expect(await lock.release()).toBe(true);
    expect(await store.exists(lock.key)).toBe(0);
  });

  it('refuses an invalid holdFor, naming it', async () => {
    await expect(first.locks.acquire('bad', { holdFor: -5 })).rejects.toMatchObject({
      name: LockOptionsError.name,
      option: 'holdFor',
    });
  });
});
