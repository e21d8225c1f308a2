import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { LockLostError, type Lock, type LockModuleOptions } from '../../src/index.js';
import { aborted, bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { fourLetters, ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

const ZOOKEEPER_PROCESS = fileURLToPath(
  new URL('../support/zookeeper-process.mjs', import.meta.url),
);

/** A separate process that holds `key` until it is killed; resolves with its fencing token. */
async function holdInProcess(
  connectionString: string,
  root: string,
  key: string,
): Promise<{ child: ChildProcess; fencingToken: number }> {
  const child = fork(ZOOKEEPER_PROCESS, ['hold'], {
    execArgv: [],
    stdio: 'inherit',
    env: { ...process.env, ZK_CONNECT: connectionString, ZK_ROOT: root, ZK_KEY: key },
  });
  const [message] = (await once(child, 'message')) as [{ acquired?: number; error?: string }];
  if (message.acquired === undefined) throw new Error(message.error);
  return { child, fencingToken: message.acquired };
}

describe('ZooKeeper backend: crashes, pauses and expired sessions', () => {
  const root = `/faults-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  let other: LockApp;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    other = await bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 2_000, root },
      waitTimeout: 20_000,
    });
  });

  afterAll(async () => {
    await other.close();
    tree.close();
    await server.stop();
  });

  /**
   * Runs `test` with an app whose only way to ZooKeeper is a proxy the test can stall or cut,
   * then closes both and checks that nothing is left in the tree.
   */
  async function throughProxy(
    sessionTimeout: number,
    test: (app: LockApp, proxy: TcpProxy) => Promise<void>,
    options: Omit<LockModuleOptions, 'zookeeper'> = {},
  ): Promise<void> {
    const proxy = await TcpProxy.start(server.port);
    const app = await bootLockApp({
      ...options,
      zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, sessionTimeout, root },
    });
    try {
      await test(app, proxy);
    } finally {
      await app.close();
      await proxy.stop();
    }
    expect(await tree.below(root)).toEqual([]);
  }

  it('a crashed holder’s node goes with its session, and the next holder gets a greater token', async () => {
    const { child, fencingToken } = await holdInProcess(server.address, root, 'crash');
    expect(await other.locks.tryAcquire('crash')).toBeNull();
    child.kill('SIGKILL');
    await once(child, 'exit');
    const lock = await other.locks.acquire('crash');
    expect(lock.fencingToken).toBeGreaterThan(fencingToken);
    await lock.release();
    expect(await tree.below(root)).toEqual([]);
  });

  it('a waiter that crashes leaves the line, and the one behind it gets the lock', async () => {
    const holder = await other.locks.acquire('crashed-waiter');
    const waiter = fork(ZOOKEEPER_PROCESS, ['hold'], {
      execArgv: [],
      stdio: 'inherit',
      env: { ...process.env, ZK_CONNECT: server.address, ZK_ROOT: root, ZK_KEY: 'crashed-waiter' },
    });
    while ((await tree.children(`${root}/lock:crashed-waiter`)).length < 2) await sleep(20);
    const behind = await bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 2_000, root },
    });
    const next = behind.locks.acquire('crashed-waiter', { waitTimeout: 20_000 });
    while ((await tree.children(`${root}/lock:crashed-waiter`)).length < 3) await sleep(20);
    waiter.kill('SIGKILL');
    await once(waiter, 'exit');
    await holder.release();
    await (await next).release();
    await behind.close();
    expect(await tree.below(root)).toEqual([]);
  });

  it('a holder cut off from ZooKeeper is told its lock is lost before its session expires and another takes it', () =>
    throughProxy(2_000, async (cutOff, proxy) => {
      const lock = await cutOff.locks.acquire('cut');
      let lostWhenTaken: boolean | undefined;
      proxy.stall();
      const taken = other.locks.acquire('cut').then((next) => {
        lostWhenTaken = lock.signal.aborted;
        return next;
      });
      const reason: unknown = await aborted(lock);
      expect(reason).toBeInstanceOf(LockLostError);
      const next = await taken;
      expect(lostWhenTaken).toBe(true);
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);

      // Back online, the expired session is replaced, and its holder holds nothing.
      proxy.resume();
      expect(await lock.release()).toBe(false);
      await next.release();
      const again: Lock = await cutOff.locks.acquire('cut', { waitTimeout: 10_000 });
      expect(again.fencingToken).toBeGreaterThan(next.fencingToken);
      await again.release();
    }));

  it('a call made as a cut-off client comes back, before it learns its session expired, is served by the next session', () =>
    throughProxy(2_000, async (cutOff, proxy) => {
      const lock = await cutOff.locks.acquire('late');
      proxy.stall();
      expect(await aborted(lock)).toBeInstanceOf(LockLostError);
      const next = await other.locks.acquire('late');
      // The server learns of the expiry first; the client only when its old session is refused.
      proxy.resume();
      const again = cutOff.locks.acquire('late', { waitTimeout: 10_000 });
      const checked = cutOff.locks.isLocked('late');
      await next.release();
      const lockAgain = await again;
      expect(lockAgain.fencingToken).toBeGreaterThan(next.fencingToken);
      // Whether it saw the key held depends on when the new session answered; it answered.
      await expect(checked).resolves.toEqual(expect.any(Boolean));
      expect(await lock.release()).toBe(false);
      await lockAgain.release();
    }));

  it('a node created though the connection dropped before its answer is found by its token, not left to hold the line', () =>
    throughProxy(4_000, async (app, proxy) => {
      await (await app.locks.acquire('lost-answer')).release();
      proxy.holdAnswers();
      const acquiring = app.locks.acquire('lost-answer', { waitTimeout: 10_000 });
      // Long enough for the server to apply the creation; its answer never comes.
      await sleep(500);
      const [contender] = await tree.below(`${root}/lock:lost-answer`);
      expect(contender).toBeDefined();
      proxy.cut();
      const lock = await acquiring;
      // The same session, the same node: the try after the lost answer found it.
      expect(await tree.below(`${root}/lock:lost-answer`)).toEqual([contender]);
      expect(await lock.release()).toBe(true);
    }));

  it('a release whose answer the dropped connection lost says the lock was released', () =>
    throughProxy(4_000, async (app, proxy) => {
      const lock = await app.locks.acquire('lost-release');
      proxy.holdAnswers();
      const releasing = lock.release();
      await sleep(500);
      expect(await tree.below(root)).toEqual([]);
      proxy.cut();
      expect(await releasing).toBe(true);
    }));

  it('the attempts of a waiter that pile up while its session is lost leave one node between them', () =>
    throughProxy(
      2_000,
      async (app, proxy) => {
        const held = await other.locks.acquire('overlap');
        const waiting = app.locks.acquire('overlap', { waitTimeout: 20_000 });
        // In line, and watching the holder's node: its first attempt is over.
        const [holderNode] = await tree.children(`${root}/lock:overlap`);
        while (!(await fourLetters(server.port, 'wchp')).includes(holderNode)) await sleep(20);
        await sleep(100);
        proxy.stall();
        // The server expires the waiter's session; its re-checks, each given up after 300 ms,
        // wait meanwhile for the connection (a few, about a second apart).
        while ((await tree.children(`${root}/lock:overlap`)).length > 1) await sleep(50);
        await sleep(2_000);
        proxy.resume();
        // Each of them learns that the session expired, and lines the waiter up again.
        while ((await tree.children(`${root}/lock:overlap`)).length < 2) await sleep(20);
        await sleep(500);
        expect(await tree.children(`${root}/lock:overlap`)).toHaveLength(2);
        await held.release();
        const lock = await waiting;
        expect(await tree.children(`${root}/lock:overlap`)).toHaveLength(1);
        expect(await lock.release()).toBe(true);
      },
      { commandTimeout: 300 },
    ));

  it('a holder whose validity ran out while the server restarted gives its node back once the server is back, though its session lives on', async () => {
    // A session far longer than the wait below: only the holder's own deletion frees the key.
    const holder = await bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 25_000, root },
    });
    try {
      const lock = await holder.locks.acquire('restart', { ttl: 300 });
      const lost = aborted(lock);
      await server.kill();
      expect(await lost).toBeInstanceOf(LockLostError);
      await server.launch();
      await server.serving();
      // The session outlives the restart; the deletion that failed while the server was down
      // is retried.
      const next = await other.locks.acquire('restart', { waitTimeout: 15_000 });
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
      await next.release();
    } finally {
      await holder.close();
    }
    expect(await tree.below(root)).toEqual([]);
  }, 60_000);
});
