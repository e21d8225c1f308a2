import {
  LockKeyResolutionError,
  LockOptionsError,
  StaleFencingTokenError,
} from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';

describe.each(backends)('the fencing guard (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let store: Backend;
  let first: LockApp;
  let second: LockApp;

  beforeAll(async () => {
    store = makeBackend();
    first = await bootLockApp(store.options({ keyPrefix: prefix }));
    second = await bootLockApp(store.options({ keyPrefix: prefix }));
    // Clients connect on their first command: not inside the 100 ms lock below.
    await Promise.all([first.locks.isLocked('warm-up'), second.locks.isLocked('warm-up')]);
  });

  afterAll(async () => {
    await Promise.all([first.close(), second.close()]);
    await store.close();
  });

  it('refuses the write of a holder whose lock expired and was taken over', async () => {
    const resource = `data:${prefix}account:1`;
    // The first holder pauses past its TTL (no watchdog), as in a long GC pause.
    const stale = await first.locks.acquire('account:1', { ttl: 100, watchdog: false });
    await sleep(150);
    const fresh = await second.locks.acquire('account:1');
    await second.locks.writeFenced(resource, 'balance=90', fresh.fencingToken);
    // The paused holder wakes up and writes what it computed before the pause.
    const error = await first.locks
      .writeFenced(resource, 'balance=100', stale.fencingToken)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleFencingTokenError);
    expect(error).toMatchObject({
      resource,
      fencingToken: stale.fencingToken,
      highestSeen: fresh.fencingToken,
    });
    expect(await store.readFenced(resource)).toBe('balance=90');
    await fresh.release();
  });

  it('lets one holder write several times, and a newer holder after it', async () => {
    const resource = `data:${prefix}order:2`;
    await first.locks.using('order:2', async (lock) => {
      await first.locks.writeFenced(resource, 'paid', lock.fencingToken);
      await first.locks.writeFenced(resource, 'shipped', lock.fencingToken);
    });
    await second.locks.using('order:2', (lock) =>
      second.locks.writeFenced(resource, 'delivered', lock.fencingToken),
    );
    expect(await store.readFenced(resource)).toBe('delivered');
  });

  it('rejects values and tokens that are not what a lock hands out', async () => {
    const bad: unknown[] = [0, -1, 1.5, Number.NaN, Infinity, '5', undefined];
    for (const token of bad) {
      await expect(
        first.locks.writeFenced(`data:${prefix}x`, 'v', token as number),
      ).rejects.toBeInstanceOf(LockOptionsError);
    }
    await expect(first.locks.writeFenced(`data:${prefix}x`, 42 as never, 1)).rejects.toBeInstanceOf(
      LockOptionsError,
    );
    expect(await store.readFenced(`data:${prefix}x`)).toBeNull();
  });

  it('refuses a resource inside the lock namespace, where it could overwrite a lock', async () => {
    await expect(first.locks.writeFenced(`${prefix}order:3`, 'v', 1)).rejects.toBeInstanceOf(
      LockKeyResolutionError,
    );
  });
});
