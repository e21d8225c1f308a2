import { randomBytes } from 'node:crypto';
import { aborted, bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';

/**
 * The ZooKeeper server stops answering (SIGSTOP) for longer than the sessions last, while one
 * app holds a lock and two others wait for it. When it resumes, the sessions expire and their
 * nodes go, the holder is told it lost the lock, and the waiters, whose attempts failed or came
 * back late meanwhile, wait on with new sessions until they hold the lock: a pause is no
 * verdict on a wait that has time left.
 */
describe('ZooKeeper paused past its sessions while callers wait', () => {
  const root = `/pause-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let apps: LockApp[];

  beforeEach(async () => {
    server = await ZooKeeperServer.start();
    apps = await Promise.all(
      [0, 1, 2].map(() =>
        bootLockApp({
          zookeeper: { connectionString: server.address, sessionTimeout: 2_000, root },
          waitTimeout: 25_000,
        }),
      ),
    );
  }, 30_000);

  afterEach(async () => {
    server.resume();
    await Promise.all(apps.map((app) => app.close()));
    const tree = await ZooKeeperTree.connect(server.address);
    try {
      expect(await tree.below(root)).toEqual([]);
    } finally {
      tree.close();
      await server.stop();
    }
  }, 30_000);

  it('lets every waiter take the lock once it answers again', async () => {
    const [holderApp, ...waiterApps] = apps;
    const holder = await holderApp.locks.acquire('k');
    const waiting = waiterApps.map((app) => app.locks.acquire('k'));
    await sleep(200);

    server.pause();
    await sleep(4_000);
    server.resume();

    await aborted(holder);
    const first = await Promise.race(waiting);
    expect(first.signal.aborted).toBe(false);
    expect(await first.release()).toBe(true);
    const [a, b] = await Promise.all(waiting);
    const second = a === first ? b : a;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await second.release()).toBe(true);
  }, 40_000);

  it('lets callers that asked during the pause take the lock in turn once it answers again', async () => {
    const [holderApp, ...callerApps] = apps;
    const holder = await holderApp.locks.acquire('asked');
    server.pause();
    const asking = callerApps.map((app) => app.locks.acquire('asked'));
    await sleep(3_000);
    server.resume();
    await aborted(holder);
    const first = await Promise.race(asking);
    expect(await first.release()).toBe(true);
    const [a, b] = await Promise.all(asking);
    const second = a === first ? b : a;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await second.release()).toBe(true);
  }, 40_000);

  it('lets a caller whose first attempt is answered after its validity wait on and take the lock', async () => {
    const [callerApp] = apps;
    server.pause();
    const asking = callerApp.locks.acquire('free', { ttl: 300 });
    await sleep(1_000);
    server.resume();
    const lock = await asking;
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  }, 40_000);
});
