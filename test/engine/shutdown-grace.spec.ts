import { LockShuttingDownError, type Lock } from '../../src/index.js';
import {
  aborted,
  bootLockApp,
  rawClient,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';

/** A promise and the function that settles it, for work that ends when the test says. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** Whether `promise` has settled by the time pending callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await sleep(20);
  return done;
}

/**
 * Shutdown lets work already running under a lock finish under it, up to `shutdownGrace`: the
 * watchdog keeps renewing, each lock is released the moment its work ends, and nobody else gets
 * it meanwhile. Waiters and new calls are refused at once.
 */
describe('shutdown with work running under locks', () => {
  let prefix: string;
  let app: LockApp;
  let other: LockApp;

  beforeEach(async () => {
    prefix = uniquePrefix();
    // A short TTL, so that the grace outlasts several of them: only renewals keep the lock.
    app = await bootLockApp({
      redis: sharedRedisUrl(),
      keyPrefix: prefix,
      ttl: 300,
      shutdownGrace: 20_000,
    });
    other = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
  });

  afterEach(async () => {
    await Promise.all([app.close(), other.close()]);
  });

  it('keeps the lock until the work ends, renewing it, then releases it and completes', async () => {
    const work = gate();
    let lock!: Lock;
    const running = app.locks.using('job', async (held) => {
      lock = held;
      await work.opened;
      return 'done';
    });
    while (!lock) await sleep(5);
    const closing = app.close();
    await sleep(1_000); // more than three TTLs
    expect(await other.locks.tryAcquire('job')).toBeNull();
    expect(await settled(closing)).toBe(false);
    expect(lock.signal.aborted).toBe(false);

    work.open();
    expect(await running).toBe('done');
    await closing;
    const next = await other.locks.acquire('job', { waitTimeout: 1_000 });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it('refuses waiters and new calls at once while the work runs', async () => {
    const [work, started] = [gate(), gate()];
    const running = app.locks.using('busy', () => {
      started.open();
      return work.opened;
    });
    await started.opened;
    const waiter = app.locks.acquire('busy', { waitTimeout: 10_000 }).catch((e: unknown) => e);
    await sleep(20);
    const closing = app.close();
    expect(await waiter).toBeInstanceOf(LockShuttingDownError);
    await expect(app.locks.acquire('elsewhere')).rejects.toBeInstanceOf(LockShuttingDownError);
    await expect(app.locks.tryAcquire('elsewhere')).rejects.toBeInstanceOf(LockShuttingDownError);
    work.open();
    await running;
    await closing;
  });

  it('lets the running work take the further locks it needs to finish', async () => {
    const [work, started, nestedHeld] = [gate(), gate(), gate()];
    const blocker = await other.locks.acquire('inventory');
    const running = app.locks.using('order', async () => {
      started.open();
      await work.opened;
      // Waits for another instance's lock, as work in flight may have to.
      return app.locks.using('inventory', () => nestedHeld.open(), { waitTimeout: 5_000 });
    });
    await started.opened;
    const closing = app.close();
    await sleep(20);
    work.open();
    await sleep(50);
    await blocker.release();
    await running;
    await nestedHeld.opened;
    await closing;
  });

  it('leaves a throttle whose work ended meanwhile closed until its window ends', async () => {
    const [work, started] = [gate(), gate()];
    const running = app.locks.using(
      'tick',
      () => {
        started.open();
        return work.opened;
      },
      { holdFor: 10_000 },
    );
    await started.opened;
    const closing = app.close();
    work.open();
    await running;
    await closing;
    const redis = rawClient(sharedRedisUrl());
    try {
      expect(await redis.pttl(`${prefix}tick`)).toBeGreaterThan(5_000);
    } finally {
      await redis.quit();
    }
  });

  it('completes as soon as a lock acquired by hand is released', async () => {
    const lock = await app.locks.acquire('manual');
    const closing = app.close();
    expect(await settled(closing)).toBe(false);
    expect(await lock.release()).toBe(true);
    await closing;
  });
});

describe('shutdown when the grace runs out', () => {
  it('aborts the signal of work still running, naming the grace, and releases its lock', async () => {
    const prefix = uniquePrefix();
    const app = await bootLockApp({
      redis: sharedRedisUrl(),
      keyPrefix: prefix,
      shutdownGrace: 300,
    });
    const other = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
    try {
      const lock = await app.locks.acquire('stuck');
      await app.close();
      expect(String(await aborted(lock))).toMatch(/grace period \(shutdownGrace 300 ms\) ran out/);
      const next = await other.locks.tryAcquire('stuck');
      expect(next).not.toBeNull();
      await next?.release();
    } finally {
      await Promise.all([app.close(), other.close()]);
    }
  });

  it('with shutdownGrace 0, ends the locks at once', async () => {
    const app = await bootLockApp({ store: 'memory', keyPrefix: uniquePrefix(), shutdownGrace: 0 });
    const lock = await app.locks.acquire('now');
    await app.close();
    expect(String(await aborted(lock))).toMatch(/the lock service shut down$/);
  });
});
