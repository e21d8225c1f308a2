import { randomBytes } from 'node:crypto';
import type { Lock } from '../../src/index.js';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { ZooKeeperEnsemble } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

describe('ZooKeeper backend on a 3-server ensemble', () => {
  const root = `/ensemble-${randomBytes(4).toString('hex')}`;
  let ensemble: ZooKeeperEnsemble;
  let apps: LockApp[];

  beforeAll(async () => {
    ensemble = await ZooKeeperEnsemble.start(3);
    apps = await Promise.all(
      [1, 2].map(() =>
        bootLockApp({
          zookeeper: { connectionString: ensemble.connectionString, sessionTimeout: 9_000, root },
          waitTimeout: 60_000,
        }),
      ),
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await ensemble.stop();
  });

  it('keeps the lock (or says it is lost) when the leader is killed, and nobody else holds it meanwhile', async () => {
    const [holderApp, waiterApp] = apps;
    const holder = await holderApp.locks.acquire('failover');
    let releasing = false;
    /** Whether the holder had let go (released, or been told it lost the lock) then. */
    let holderDoneWhenTaken: boolean | undefined;
    const waiting = waiterApp.locks.acquire('failover').then((lock: Lock) => {
      holderDoneWhenTaken = releasing || holder.signal.aborted;
      return lock;
    });
    await sleep(200);

    const leader = await ensemble.leader();
    await leader.kill();
    const newLeader = await ensemble.leader();
    expect(newLeader).not.toBe(leader);
    // Several renewals' worth of time on the new leader.
    await sleep(3_000);

    // The session (9 s) normally outlives the election: the lock is still the holder's alone.
    // Should the election outlast the lock's validity, the holder must have been told.
    expect(holderDoneWhenTaken).toBeUndefined();
    if (!holder.signal.aborted) {
      releasing = true;
      expect(await holder.release()).toBe(true);
    }
    const next = await waiting;
    expect(holderDoneWhenTaken).toBe(true);
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken);
    expect(Number.isSafeInteger(next.fencingToken)).toBe(true);
    await next.release();

    await leader.launch();
    await leader.serving();
    const tree = await ZooKeeperTree.connect(leader.address);
    expect(await tree.below(root)).toEqual([]);
    tree.close();
  }, 120_000);
});
