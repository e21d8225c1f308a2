import { randomBytes } from 'node:crypto';
import { LockLostError } from '../../src/index.js';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import {
  PARTITION_SYNC_LIMIT,
  ZooKeeperEnsemble,
  type ZooKeeperServer,
} from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

describe('ZooKeeper backend: a holder whose server is cut off from the leader', () => {
  const root = `/partition-${randomBytes(4).toString('hex')}`;
  let ensemble: ZooKeeperEnsemble;

  beforeAll(async () => {
    // The follower goes on serving past the holder's session (see PARTITION_SYNC_LIMIT).
    ensemble = await ZooKeeperEnsemble.start(3, {
      syncLimit: PARTITION_SYNC_LIMIT,
      partitionable: true,
    });
  }, 60_000);

  afterAll(async () => {
    await ensemble.stop();
  });

  it('is told its lock is lost before another session takes it, though its server still says its node exists', async () => {
    const leader = await ensemble.leader();
    const follower = ensemble.servers.find((server) => server !== leader) as ZooKeeperServer;
    expect(await follower.srvr()).toContain('Mode: follower');
    const apps: LockApp[] = [];
    const trees: ZooKeeperTree[] = [];
    try {
      // The holder reaches the ensemble only through the follower, the other only through the
      // leader; each tree looks at the tree through one of them.
      const holderApp = await bootLockApp({
        zookeeper: { connectionString: follower.address, sessionTimeout: 2_000, root },
      });
      apps.push(holderApp);
      const otherApp = await bootLockApp({
        zookeeper: { connectionString: leader.address, sessionTimeout: 2_000, root },
        waitTimeout: 30_000,
      });
      apps.push(otherApp);
      const leaderTree = await ZooKeeperTree.connect(leader.address);
      trees.push(leaderTree);
      const followerTree = await ZooKeeperTree.connect(follower.address);
      trees.push(followerTree);

      const lock = await holderApp.locks.acquire('split');
      const [holderNode] = await leaderTree.below(`${root}/lock:split`);
      const holderPath = `${root}/lock:split/${holderNode}`;
      let lostWhenTaken: boolean | undefined;
      let reasonWhenTaken: unknown;
      const taken = otherApp.locks.acquire('split').then((next) => {
        lostWhenTaken = lock.signal.aborted;
        reasonWhenTaken = lock.signal.reason;
        return next;
      });
      // The other session waits in line behind the holder.
      while ((await leaderTree.children(`${root}/lock:split`)).length < 2) await sleep(20);

      ensemble.isolate(follower);
      const next = await taken;
      // The window: the follower still serves reads, and says the holder's node is there,
      // though the leader has deleted it and another session holds the lock.
      expect(await followerTree.stat(holderPath)).toBeDefined();
      expect(await leaderTree.stat(holderPath)).toBeUndefined();
      expect(lostWhenTaken).toBe(true);
      expect(reasonWhenTaken).toBeInstanceOf(LockLostError);
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
      expect(await next.release()).toBe(true);

      // The follower notices at last, and stops serving; then the partition heals.
      while ((await follower.srvr()).includes('Mode: follower')) await sleep(50);
      // Healed, the follower rejoins; the holder's expired session is replaced, and the lock
      // it lost is not its to release.
      ensemble.heal();
      await follower.serving();
      expect(await lock.release()).toBe(false);
      // The holder's client gets its new session through the rejoined follower, which may take
      // longer than one call's commandTimeout on a loaded machine: it asks until it answers.
      while (
        !(await holderApp.locks.isLocked('split').then(
          () => true,
          () => false,
        ))
      ) {
        await sleep(100);
      }
      const again = await holderApp.locks.acquire('split', { waitTimeout: 20_000 });
      expect(again.fencingToken).toBeGreaterThan(next.fencingToken);
      expect(await again.release()).toBe(true);
      expect(await leaderTree.below(root)).toEqual([]);
    } finally {
      for (const tree of trees) tree.close();
      await Promise.all(apps.map((app) => app.close()));
    }
  }, 120_000);
});
