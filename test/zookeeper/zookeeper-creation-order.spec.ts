import { randomBytes } from 'node:crypto';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/**
 * Callers of one app keep the order they came in while their ZooKeeper session connects and
 * while the lock's node is being created: no later caller's node gets a smaller sequence.
 */
describe('ZooKeeper backend: the order of one app’s callers', () => {
  const CALLERS = 20;
  const TRIALS = 3;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  const roots: string[] = [];

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
  });

  afterAll(async () => {
    for (const root of roots) expect(await tree.below(root)).toEqual([]);
    tree.close();
    await server.stop();
  });

  /** A new app on a root of its own, whose session connects with its first call. */
  const boot = () => {
    const root = `/arrivals-${randomBytes(4).toString('hex')}`;
    roots.push(root);
    return bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
      waitTimeout: 20_000,
    });
  };

  /**
   * Callers of `app` ask for `key` one after the other, a millisecond apart, and each lets go
   * as soon as it gets in: their indexes in the order they got in.
   */
  async function arrivals(app: LockApp, key: string): Promise<number[]> {
    const entered: number[] = [];
    const callers: Promise<void>[] = [];
    for (let i = 0; i < CALLERS; i++) {
      callers.push(
        app.locks.acquire(key).then(async (lock) => {
          entered.push(i);
          await lock.release();
        }),
      );
      await sleep(1);
    }
    await Promise.all(callers);
    return entered;
  }

  const inOrder = Array.from({ length: CALLERS }, (_, i) => i);

  it('keeps the order of callers that come before its session is up', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const app = await boot();
      try {
        expect(await arrivals(app, 'boot')).toEqual(inOrder);
      } finally {
        await app.close();
      }
    }
  });

  it('keeps the order of callers that come while the lock’s node is being created', async () => {
    const app = await boot();
    try {
      // The session is up; each key's lock node is missing when the first caller comes.
      expect(await app.locks.isLocked('warm-up')).toBe(false);
      for (let trial = 0; trial < TRIALS; trial++) {
        expect(await arrivals(app, `new:${trial}`)).toEqual(inOrder);
      }
    } finally {
      await app.close();
    }
  });
});
