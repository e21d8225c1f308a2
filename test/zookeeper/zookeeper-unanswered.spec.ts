import { randomBytes } from 'node:crypto';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/**
 * ZooKeeper's node creations, unanswered: a waiter gives up
 * while the creation of its node is applied by the server but unanswered (the answers are held
 * by a proxy), in a session that lives on. Its node must not stay in the line: once the
 * connection comes back (cut and reconnected, or answers delivered after the creation's
 * patience of 10 s ran out), it is deleted, and the next caller of another process gets the lock.
 */
describe('ZooKeeper: a waiter that gives up while its creation is unanswered', () => {
  const root = `/unanswered-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  let other: LockApp;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    other = await bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
    });
  });

  afterAll(async () => {
    await other.close();
    tree.close();
    await server.stop();
  });

  async function throughProxy(test: (app: LockApp, proxy: TcpProxy) => Promise<void>) {
    const proxy = await TcpProxy.start(server.port);
    const app = await bootLockApp({
      commandTimeout: 300,
      zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, sessionTimeout: 20_000, root },
    });
    try {
      await test(app, proxy);
    } finally {
      await app.close();
      await proxy.stop();
    }
    expect(await tree.below(root)).toEqual([]);
  }

  /** The app's waiter gives up while its node's creation is applied and unanswered. */
  async function giveUpUnanswered(app: LockApp, proxy: TcpProxy, key: string, stall = false) {
    await (await app.locks.acquire(key)).release();
    const held = await other.locks.acquire(key);
    if (stall) proxy.stall();
    else proxy.holdAnswers();
    const error = await app.locks.acquire(key, { waitTimeout: 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    // Held answers: the server applied it, the waiter's node stands behind the holder's.
    // Stalled: the creation waits in the proxy, to be applied when it resumes.
    expect(await tree.children(`${root}/lock:${key}`)).toHaveLength(stall ? 1 : 2);
    return held;
  }

  /** The waiter's node goes, and another process gets the lock after the holder. */
  async function lineClears(key: string, held: { release(): Promise<boolean> }) {
    for (let i = 0; i < 150 && (await tree.children(`${root}/lock:${key}`)).length > 1; i++) {
      await sleep(100);
    }
    expect(await tree.children(`${root}/lock:${key}`)).toHaveLength(1);
    await held.release();
    const next = await other.locks.acquire(key, { waitTimeout: 5_000 });
    await next.release();
  }

  it('the connection is cut and comes back in the same session: the node is deleted', () =>
    throughProxy(async (app, proxy) => {
      const held = await giveUpUnanswered(app, proxy, 'cut');
      proxy.cut();
      await lineClears('cut', held);
    }));

  it(
    'the creation reaches the server after its patience ran out: the node is deleted',
    () =>
      throughProxy(async (app, proxy) => {
        const held = await giveUpUnanswered(app, proxy, 'patience', true);
        await sleep(11_000);
        // Delivered late, in order, on the same connection, in the same (20 s) session.
        proxy.resume();
        // The creation reaches the server now: its node shows before the departure deletes it.
        for (let i = 0; i < 300; i++) {
          if ((await tree.children(`${root}/lock:patience`)).length >= 2) break;
          await sleep(10);
        }
        await lineClears('patience', held);
      }),
    60_000,
  );

  it('a second caller of the app comes while the first one’s creation is unanswered, and both give up', () =>
    throughProxy(async (app, proxy) => {
      await (await app.locks.acquire('two')).release();
      const held = await other.locks.acquire('two');
      proxy.holdAnswers();
      const first = app.locks.acquire('two', { waitTimeout: 800 }).catch((e: unknown) => e);
      await sleep(100);
      const second = app.locks.acquire('two', { waitTimeout: 800 }).catch((e: unknown) => e);
      expect(await first).toBeInstanceOf(Error);
      expect(await second).toBeInstanceOf(Error);
      expect(await tree.children(`${root}/lock:two`)).toHaveLength(3);
      proxy.cut();
      await lineClears('two', held);
    }));

  it('a session expires under three waiters of the app (one of which gives up meanwhile): every waiter gets the lock in turn, and no node is left', async () => {
    const proxy = await TcpProxy.start(server.port);
    const app = await bootLockApp({
      commandTimeout: 1_000,
      zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, sessionTimeout: 2_000, root },
    });
    try {
      await (await app.locks.acquire('expiry')).release();
      const held = await other.locks.acquire('expiry');
      const waiters = [0, 1, 2].map((i) =>
        app.locks
          .acquire('expiry', { waitTimeout: i === 1 ? 1_500 : 20_000 })
          .then(async (lock) => {
            await sleep(50);
            return lock.release();
          }),
      );
      while ((await tree.children(`${root}/lock:expiry`)).length < 4) await sleep(20);
      // Their first attempts answered: they wait.
      await sleep(1_000);
      proxy.stall();
      // The server expires the app's session: its three nodes go.
      while ((await tree.children(`${root}/lock:expiry`)).length > 1) await sleep(50);
      await sleep(1_000);
      proxy.resume();
      // The two that still wait line up again in the next session.
      for (let i = 0; i < 200 && (await tree.children(`${root}/lock:expiry`)).length < 3; i++) {
        await sleep(50);
      }
      await sleep(1_000);
      await held.release();
      const settled = await Promise.allSettled(waiters);
      expect(settled.map((r) => (r.status === 'fulfilled' ? r.status : String(r.reason)))).toEqual([
        'fulfilled',
        expect.stringContaining(''),
        'fulfilled',
      ]);
      // Nothing of the app's left at the head of the line: another process gets the lock.
      expect(await tree.children(`${root}/lock:expiry`)).toEqual([]);
      const next = await other.locks.acquire('expiry', { waitTimeout: 5_000 });
      await next.release();
    } finally {
      await app.close();
      await proxy.stop();
    }
  }, 60_000);
});
