import { randomBytes } from 'node:crypto';
import { until } from '../support/backends.js';
import { LockProcess, type HeldLock } from '../support/lock-child.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';
import { ZooKeeperTurnstile } from '../support/zookeeper-turnstile.js';

/** Far longer than a session takes to come up: only an app that never connects reaches it. */
const SESSION_BOUND = 20_000;

/**
 * Callers of two apps (processes of their own, each with its ZooKeeper session) who call one
 * after the other, alternating between the apps, get the lock in the order they called: on the
 * apps' first calls after boot (the root and the lock's node not there yet), and on later calls
 * (the lock's node deleted by the other app's last release).
 *
 * "One after the other" is made exact rather than left to timing: a caller calls once the one
 * before it has called, in its own process, and what that call sends at once has left; and
 * the apps reach ZooKeeper through a turnstile that lets their requests in one at a time, in
 * the order they came (two sessions' requests that reach a server together may be applied in
 * either order). So a caller gets in behind one who came after it only if its app held its
 * node's creation back (waiting for a connection, the root or the lock's node) while the other
 * app's caller was sent. Each app's session must be up before its first call (it connects as
 * the app boots): a session still connecting can put nobody in line, and its app's callers take
 * their places once it is up, behind those of an app that was connected.
 */
describe('ZooKeeper backend: the order of two apps’ callers, from their first calls on', () => {
  const CALLERS = 20;
  const TRIALS = 3;
  const inOrder = Array.from({ length: CALLERS }, (_, i) => i);
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

  /**
   * Caller `i` asks for `key` in app `i % 2`, once caller `i - 1` has called and the turnstile
   * has its app's next request; each holds until every caller has called, then lets go once it
   * gets in. The callers' indexes in the order they got in.
   */
  async function arrivals(
    apps: LockProcess[],
    turnstile: ZooKeeperTurnstile,
    key: string,
  ): Promise<number[]> {
    const waits = new Map<number, Promise<HeldLock>>();
    for (let i = 0; i < CALLERS; i++) {
      const connection = turnstile.connections[i % 2];
      const sent = connection.received;
      const { called, lock } = apps[i % 2].call(key);
      waits.set(i, lock);
      await called;
      await until(async () => connection.received > sent, SESSION_BOUND);
    }
    const entered: number[] = [];
    while (waits.size > 0) {
      const [i, lock] = await Promise.race(
        [...waits].map(([i, wait]) => wait.then((lock) => [i, lock] as const)),
      );
      waits.delete(i);
      entered.push(i);
      await lock.release();
    }
    return entered;
  }

  it('lets callers of two apps in in the order they called, on the apps’ first calls and later', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const turnstile = await ZooKeeperTurnstile.start(server.port);
      const root = `/first-calls-${randomBytes(4).toString('hex')}`;
      roots.push(root);
      const options = {
        zookeeper: { connectionString: turnstile.address, sessionTimeout: 4_000, root },
        waitTimeout: 30_000,
      };
      const apps: LockProcess[] = [];
      try {
        // Each app's session comes up as it boots, before any call: connection n is app n's.
        for (const up of [1, 2]) {
          apps.push(await LockProcess.start(options));
          await until(async () => turnstile.sessions === up, SESSION_BOUND);
        }
        expect(await arrivals(apps, turnstile, 'first')).toEqual(inOrder);
        expect(await arrivals(apps, turnstile, 'first')).toEqual(inOrder);
      } finally {
        await Promise.all(apps.map((app) => app.close()));
        await turnstile.stop();
      }
    }
  }, 180_000);
});
