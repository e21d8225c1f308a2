import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { LockNotAcquiredError, LockOptionsError } from '../../src/index.js';
import { until } from '../support/backends.js';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/** How long a test looks for a state it cannot await before it fails, in ms. */
const BOUND = 10_000;

describe('a holdFor throttle on ZooKeeper, dated by the server', () => {
  const root = `/throttle-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  let apps: LockApp[] = [];

  const boot = async () => {
    const zookeeper = { connectionString: server.address, sessionTimeout: 4_000, root };
    const app = await bootLockApp({ zookeeper, waitTimeout: 0 });
    apps.push(app);
    return app;
  };
  /** The throttle windows' nodes under the root. */
  const windows = async () =>
    (await tree.children(root)).filter((name) => name.endsWith('.window'));

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  afterAll(async () => {
    tree.close();
    await server.stop();
  });

  it('keeps the key taken for a caller whose clock runs ahead, and opens when the server says', async () => {
    const [a, b] = [await boot(), await boot()];
    await a.locks.using('report', () => undefined, { holdFor: 1_500 });
    // Were the window dated by the callers' clocks, one 10 s ahead would find it long ended.
    const realNow = Date.now.bind(Date);
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 10_000);
    const early = await b.locks
      .using('report', () => 'ran', { holdFor: 1_500 })
      .catch((error: unknown) => error);
    expect(early).toBeInstanceOf(LockNotAcquiredError);
    expect(early).toMatchObject({ throttled: true });
    expect(await b.locks.isLocked('report')).toBe(true);
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() - 10_000);
    await until(async () => !(await b.locks.isLocked('report')), BOUND);
    await expect(b.locks.using('report', () => 'ran')).resolves.toBe('ran');
  });

  it('a waiter granted late keeps the key until holdFor after its grant, not after it lined up', async () => {
    const [a, b] = [await boot(), await boot()];
    const holdFor = 1_500;
    const first = await a.locks.acquire('digest');
    const waiting = b.locks.acquire('digest', { holdFor, waitTimeout: 30_000 });
    // The waiter's node is created now; it is granted the lock well over holdFor later.
    await until(async () => (await tree.children(`${root}/lock:digest`)).length === 2, BOUND);
    await sleep(holdFor + 1_000);
    const releasedAt = performance.now();
    await first.release();
    const lock = await waiting;
    expect(await lock.release()).toBe(true);
    expect(await a.locks.isLocked('digest')).toBe(true);
    const early = await a.locks
      .using('digest', () => 'ran', { holdFor })
      .catch((error: unknown) => error);
    expect(early).toMatchObject({ throttled: true });
    await until(async () => !(await a.locks.isLocked('digest')), BOUND);
    // Granted after the first holder's release was sent: the window ends holdFor after that at
    // the soonest (give or take a few ms: the server's times are whole ms of its wall clock).
    expect(performance.now() - releasedAt).toBeGreaterThanOrEqual(holdFor - 5);
  });

  it('deletes the window node once the window ended, with no caller asking', async () => {
    const a = await boot();
    await a.locks.using('nightly', () => undefined, { holdFor: 300 });
    expect(await windows()).toEqual(['lock:nightly.window']);
    await until(async () => (await windows()).length === 0, BOUND);
    expect(await tree.below(root)).toEqual([]);
  });

  it('a window left by a stopped process is deleted by the next caller that finds it ended', async () => {
    const a = await boot();
    await a.locks.using('hourly', () => undefined, { holdFor: 300 });
    await a.close();
    expect(await windows()).toEqual(['lock:hourly.window']);
    const b = await boot();
    await until(async () => !(await b.locks.isLocked('hourly')), BOUND);
    expect(await tree.below(root)).toEqual([]);
  });

  it('refuses holdFor beside a semaphore or a read-write lock: a window closes the whole key', async () => {
    const a = await boot();
    for (const kind of [{ limit: 2 }, { mode: 'read' as const }]) {
      const asked = a.locks.acquire('mixed', { holdFor: 500, ...kind });
      await expect(asked).rejects.toBeInstanceOf(LockOptionsError);
      await expect(asked).rejects.toMatchObject({ option: 'holdFor' });
    }
  });
});
