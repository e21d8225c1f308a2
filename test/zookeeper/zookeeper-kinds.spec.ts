import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { LockKindError } from '../../src/index.js';
import { newToken } from '../../src/engine/token.js';
import { kindOf } from '../../src/store/lock-kind.js';
import { ZooKeeperLockStore } from '../../src/store/zookeeper/zookeeper.store.js';
import { until } from '../support/backends.js';
import { bootLockApp, type LockApp } from '../support/lock-app.js';
import {
  crowdReadWrite,
  crowdSemaphore,
  readersAndWritersInOrder,
  semaphoreInOrder,
  writerAmidReaders,
} from '../support/kind-scenarios.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

const ZOOKEEPER_PROCESS = fileURLToPath(
  new URL('../support/zookeeper-process.mjs', import.meta.url),
);

describe('ZooKeeper backend: semaphores and read-write locks', () => {
  const root = `/kinds-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  /** Three processes' worth of lock services, each with its own ZooKeeper session. */
  let apps: LockApp[];
  /**
   * A store of its own, without an engine, to hear its notices: the engine's fallback re-check
   * would hide a waiter that is never woken.
   */
  const bareStore = () =>
    new ZooKeeperLockStore({
      connectionString: server.address,
      sessionTimeout: 4_000,
      root,
      commandTimeout: 5_000,
      keyPrefix: 'lock:',
    });
  /** How many contenders stand in the line of lock key `name` (prefix included). */
  const lineLength = async (name: string) => (await tree.children(`${root}/lock:${name}`)).length;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    apps = await Promise.all(
      [1, 2, 3].map(() =>
        bootLockApp({
          zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
          waitTimeout: 60_000,
        }),
      ),
    );
  });

  afterEach(async () => {
    // Every test releases what it took: nothing may be left in the tree.
    expect(await tree.below(root)).toEqual([]);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    tree.close();
    await server.stop();
  });

  it('never lets more than `limit` callers of three sessions in at once, and lets that many in', async () => {
    const { most, fences } = await crowdSemaphore(apps, 'api', 4, 48);
    expect(most).toBe(4);
    // Each permit is a node of its own, and its creation zxid the permit's fencing token.
    expect(new Set(fences).size).toBe(48);
  });

  it('serves a semaphore’s waiters of every session in the order they came', async () => {
    // The oldest permit goes back each time: not the node just before the next waiter's.
    const seen = await semaphoreInOrder(apps, 'fifo', [1, 2, 0, 1], () => lineLength('fifo'));
    expect(seen).toEqual([[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]);
  });

  it('wakes a semaphore’s waiter when a permit ahead of it goes, not only its predecessor', async () => {
    const store = bareStore();
    const token = () => newToken(kindOf({ limit: 2 }).tag);
    const [first, second, waiter] = [token(), token(), token()];
    const turns: string[] = [];
    const unsubscribe = await store.subscribe('permits', (event) => {
      if (event.type === 'turn') turns.push(event.token);
    });
    expect(await store.acquire('permits', first, 1_000, true, () => true)).toMatchObject({
      acquired: true,
    });
    expect(await store.acquire('permits', second, 1_000, true, () => true)).toMatchObject({
      acquired: true,
    });
    expect(await store.acquire('permits', waiter, 1_000, true, () => true)).toMatchObject({
      acquired: false,
    });
    await store.release('permits', first);
    await until(async () => turns.includes(waiter));
    expect(await store.acquire('permits', waiter, 1_000, true, () => true)).toMatchObject({
      acquired: true,
    });
    unsubscribe();
    await store.release('permits', second);
    await store.release('permits', waiter);
    await store.close();
  });

  it('lets readers of three sessions overlap, and never a writer with anyone', async () => {
    const { clashes, mostReaders, fences } = await crowdReadWrite(apps, 'report', 48, 4);
    expect(clashes).toEqual([]);
    expect(mostReaders).toBeGreaterThan(1);
    expect(new Set(fences).size).toBe(48);
  });

  it('wakes a reader when the writer before it goes, though a reader waits between them', async () => {
    const store = bareStore();
    const writer = newToken(kindOf({ mode: 'write' }).tag);
    const readers = [
      newToken(kindOf({ mode: 'read' }).tag),
      newToken(kindOf({ mode: 'read' }).tag),
    ];
    const turns: string[] = [];
    const unsubscribe = await store.subscribe('shares', (event) => {
      if (event.type === 'turn') turns.push(event.token);
    });
    expect(await store.acquire('shares', writer, 1_000, true, () => true)).toMatchObject({
      acquired: true,
    });
    for (const reader of readers) {
      expect(await store.acquire('shares', reader, 1_000, true, () => true)).toMatchObject({
        acquired: false,
      });
    }
    await store.release('shares', writer);
    // The second reader watches the writer, not the reader just before it.
    await until(async () => turns.includes(readers[1]));
    for (const reader of [...readers].reverse()) {
      expect(await store.acquire('shares', reader, 1_000, true, () => true)).toMatchObject({
        acquired: true,
      });
    }
    unsubscribe();
    for (const reader of readers) await store.release('shares', reader);
    await store.close();
  });

  it('lets a writer in before any reader that came after it, however many keep coming', async () => {
    const { cutIn, launchedWhileWaiting } = await writerAmidReaders(
      apps,
      'busy',
      async () => (await tree.children(`${root}/lock:busy`)).some((name) => name.startsWith('w.')),
      { readMs: 30, gapMs: 5 },
    );
    expect(cutIn).toEqual([]);
    expect(launchedWhileWaiting).toBeGreaterThan(0);
  });

  it('serves readers and writers of every session in the order they came', async () => {
    const [afterHolder, afterFirstReader, atLast] = await readersAndWritersInOrder(
      apps,
      'order',
      () => lineLength('order'),
    );
    expect(afterHolder).toEqual(['read0']);
    expect(afterFirstReader).toEqual(['read0', 'write1']);
    expect(atLast.slice(2).sort()).toEqual(['read2', 'read3']);
  });

  it('refuses a caller of another kind or limit, naming both, and leaves no node of it', async () => {
    const permit = await apps[0].locks.acquire('kinds', { limit: 3 });
    await expect(apps[1].locks.acquire('kinds', { limit: 2 })).rejects.toThrow(
      new LockKindError('kinds', 'a semaphore of limit 3', 'a semaphore of limit 2'),
    );
    await expect(apps[1].locks.tryAcquire('kinds', { mode: 'read' })).rejects.toThrow(
      new LockKindError('kinds', 'a semaphore of limit 3', 'a read-write lock (read)'),
    );
    // Unlike on Redis, a mutex caller stands in the same line: it is refused too.
    await expect(apps[2].locks.acquire('kinds')).rejects.toThrow(
      new LockKindError('kinds', 'a semaphore of limit 3', 'a mutex'),
    );
    expect(await lineLength('kinds')).toBe(1);
    await permit.release();

    const mutex = await apps[0].locks.acquire('kinds');
    await expect(apps[1].locks.acquire('kinds', { mode: 'write' })).rejects.toThrow(
      new LockKindError('kinds', 'a mutex', 'a read-write lock (write)'),
    );
    await mutex.release();

    const reader = await apps[0].locks.acquire('kinds', { mode: 'read' });
    await expect(apps[1].locks.acquire('kinds', { limit: 3 })).rejects.toThrow(
      new LockKindError('kinds', 'a read-write lock', 'a semaphore of limit 3'),
    );
    expect(await apps[1].locks.tryAcquire('kinds', { mode: 'write' })).toBeNull();
    expect(await lineLength('kinds')).toBe(1);
    await reader.release();
  });

  it('lets a caller wait behind a mistaken node of another kind that stands behind its own kind, instead of refusing it', async () => {
    const held = await Promise.all([
      apps[0].locks.acquire('mistake', { limit: 2 }),
      apps[1].locks.acquire('mistake', { limit: 2 }),
    ]);
    // A caller that asked for another limit, cut off before it could look and leave.
    const mistaken = await tree.createEphemeralSequential(
      `${root}/lock:mistake/${newToken(kindOf({ limit: 3 }).tag)}-`,
    );
    expect(await apps[2].locks.tryAcquire('mistake', { limit: 2 })).toBeNull();
    const waiting = apps[2].locks.acquire('mistake', { limit: 2 });
    await until(async () => (await lineLength('mistake')) === 4);
    await held[0].release();
    await tree.remove(mistaken);
    const lock = await waiting;
    await Promise.all([held[1].release(), lock.release()]);
  });

  it('gives a crashed holder’s permit back when its session ends', async () => {
    const holders: ChildProcess[] = [];
    for (let i = 0; i < 2; i++) {
      const child = fork(ZOOKEEPER_PROCESS, ['hold'], {
        execArgv: [],
        stdio: 'inherit',
        env: {
          ...process.env,
          ZK_CONNECT: server.address,
          ZK_ROOT: root,
          ZK_KEY: 'crash',
          ZK_LIMIT: '2',
        },
      });
      const [message] = (await once(child, 'message')) as [{ acquired?: number; error?: string }];
      if (message.acquired === undefined) throw new Error(message.error);
      holders.push(child);
    }
    expect(await apps[0].locks.tryAcquire('crash', { limit: 2 })).toBeNull();
    const waiter = apps[0].locks.acquire('crash', { limit: 2 });
    holders[0].kill('SIGKILL');
    await once(holders[0], 'exit');
    const permit = await waiter;
    // The other holder keeps its permit: the key is full again.
    expect(await apps[1].locks.tryAcquire('crash', { limit: 2 })).toBeNull();
    holders[1].kill('SIGKILL');
    await once(holders[1], 'exit');
    await permit.release();
    // The last holder's session ends too, and with it its node; the lock's node stays until
    // the key's next release (see docs/zookeeper.md, "What stays").
    await until(async () => (await lineLength('crash')) === 0);
    const last = await apps[1].locks.acquire('crash', { limit: 2 });
    await last.release();
  });
});
