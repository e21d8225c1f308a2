import { randomBytes } from 'node:crypto';
import {
  LockNotAcquiredError,
  LockService,
  StaleFencingTokenError,
  type Lock,
} from '../../src/index.js';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { fourLetters, ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/** Which nodes the server has watches on (`wchp`), each with how many sessions watch it. */
async function watchedPaths(server: ZooKeeperServer): Promise<Map<string, number>> {
  const watched = new Map<string, number>();
  let path: string | undefined;
  for (const line of (await fourLetters(server.port, 'wchp')).split('\n')) {
    if (line.startsWith('/')) watched.set((path = line.trim()), 0);
    else if (path && line.trim().startsWith('0x')) watched.set(path, (watched.get(path) ?? 0) + 1);
  }
  return watched;
}

describe('ZooKeeper backend (standalone server)', () => {
  const root = `/locks-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  /** Three processes' worth of lock services, each with its own ZooKeeper session. */
  let apps: LockApp[];
  let locks: LockService;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    apps = await Promise.all(
      [1, 2, 3].map(() =>
        bootLockApp({
          zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
          waitTimeout: 5_000,
        }),
      ),
    );
    locks = apps[0].locks;
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

  it('holds the lock as the smallest ephemeral sequential node, and leaves nothing on release', async () => {
    const lock = await locks.acquire('order:1');
    expect(lock.key).toBe('lock:order:1');
    const nodes = await tree.children(`${root}/lock:order:1`);
    expect(nodes).toEqual([expect.stringMatching(new RegExp(`^${lock.token}-\\d{10}$`))]);
    const stat = await tree.stat(`${root}/lock:order:1/${nodes[0]}`);
    expect(stat?.ephemeralOwner.readBigUInt64BE(0)).not.toBe(0n);
    expect(await apps[1].locks.isLocked('order:1')).toBe(true);

    expect(await lock.release()).toBe(true);
    expect(await tree.children(root)).toEqual([]);
    expect(await apps[1].locks.isLocked('order:1')).toBe(false);
    expect(await lock.release()).toBe(false);
  });

  it('takes the node’s creation zxid as the fencing token: strictly increasing across holders', async () => {
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) {
      const lock = await apps[i % 3].locks.acquire('fenced');
      const [node] = await tree.children(`${root}/lock:fenced`);
      expect(lock.fencingToken).toBe(await tree.czxid(`${root}/lock:fenced/${node}`));
      tokens.push(lock.fencingToken);
      await lock.release();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    expect(tokens.every((token) => Number.isSafeInteger(token))).toBe(true);
  });

  it('excludes across sessions: a read-modify-write under the lock loses no update', async () => {
    let balance = 0;
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        apps[i % 3].locks.using(
          'balance',
          async () => {
            if (++inside > 1) overlaps++;
            const read = balance;
            await sleep(2);
            balance = read + 1;
            inside--;
          },
          { waitTimeout: 30_000 },
        ),
      ),
    );
    expect(overlaps).toBe(0);
    expect(balance).toBe(24);
  });

  it('serves waiters of different sessions first come, first served, each watching only its predecessor', async () => {
    // Callers of one process queue in that process, behind its head: one waiter per process.
    const more = await Promise.all(
      [1, 2].map(() =>
        bootLockApp({
          zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
        }),
      ),
    );
    const waiting = [apps[1], apps[2], ...more];
    const holder = await locks.acquire('fifo');
    const order: number[] = [];
    const waiters: Promise<Lock>[] = [];
    for (let i = 0; i < 4; i++) {
      const waiter = waiting[i].locks.acquire('fifo').then((lock) => {
        order.push(i);
        return lock;
      });
      waiters.push(waiter);
      // Each waiter's node is in line before the next one starts.
      for (let tries = 0; (await tree.children(`${root}/lock:fifo`)).length < i + 2; tries++) {
        await sleep(10);
      }
    }
    const line = await tree.children(`${root}/lock:fifo`);
    let fifoWatches: [string, number][] = [];
    // The last waiter sets its watch just after its node is in line.
    for (let tries = 0; tries < 100 && fifoWatches.length < 4; tries++) {
      await sleep(20);
      const watched = await watchedPaths(server);
      fifoWatches = [...watched].filter(([path]) => path.startsWith(`${root}/lock:fifo/`));
    }
    // Four waiters, four watched nodes (the holder's and the first three waiters'), one watch
    // each: no herd on the holder's node.
    expect(fifoWatches).toHaveLength(4);
    expect(fifoWatches.every(([, count]) => count === 1)).toBe(true);
    expect(line).toHaveLength(5);

    await holder.release();
    for (const waiter of waiters) await (await waiter).release();
    await Promise.all(more.map((app) => app.close()));
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('tryAcquire leaves no node behind while the lock is held', async () => {
    const holder = await apps[1].locks.acquire('try');
    expect(await locks.tryAcquire('try')).toBeNull();
    expect(await tree.children(`${root}/lock:try`)).toHaveLength(1);
    await holder.release();
    const lock = await locks.tryAcquire('try');
    expect(lock).not.toBeNull();
    await lock!.release();
  });

  it('a waiter that times out or is aborted deletes its node', async () => {
    const holder = await apps[1].locks.acquire('leave');
    const [holderNode] = await tree.children(`${root}/lock:leave`);
    await expect(locks.acquire('leave', { waitTimeout: 300 })).rejects.toBeInstanceOf(
      LockNotAcquiredError,
    );
    // The caller is answered at once; its node is deleted right behind, from its own session.
    while ((await tree.children(`${root}/lock:leave`)).length > 1) await sleep(10);
    expect(await tree.children(`${root}/lock:leave`)).toEqual([holderNode]);
    const abort = new AbortController();
    const waiting = apps[2].locks.acquire('leave', { signal: abort.signal });
    while ((await tree.children(`${root}/lock:leave`)).length < 2) await sleep(10);
    abort.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    while ((await tree.children(`${root}/lock:leave`)).length > 1) await sleep(10);
    expect(await tree.children(`${root}/lock:leave`)).toEqual([holderNode]);
    await holder.release();
  });

  it('escapes keys one-to-one into a single node name', async () => {
    const keys = ['a/b', 'a%2Fb', '..', '.', 'ü/ß', 'zookeeper', ' x '];
    const held = await Promise.all(keys.map((key) => locks.acquire(key, { waitTimeout: 0 })));
    const names = await tree.children(root);
    expect(names).toHaveLength(keys.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'lock:a%2Fb',
        'lock:a%252Fb',
        'lock:%2E%2E',
        'lock:%2E',
        'lock:%C3%BC%2F%C3%9F',
        'lock:zookeeper',
        'lock:%20x%20',
      ]),
    );
    await Promise.all(held.map((lock) => lock.release()));
  });

  it('guards a fenced write with the highest token seen, in a node of its own', async () => {
    const first = await locks.acquire('doc');
    const second = await (async () => {
      await first.release();
      return apps[1].locks.acquire('doc');
    })();
    await locks.writeFenced('doc-state', 'new', second.fencingToken);
    await expect(locks.writeFenced('doc-state', 'old', first.fencingToken)).rejects.toBeInstanceOf(
      StaleFencingTokenError,
    );
    expect(JSON.parse(await tree.getData(`${root}/doc-state`))).toEqual({
      fencingToken: second.fencingToken,
      value: 'new',
    });
    await second.release();
    // The fenced value is data, not a lock: it stays until its owner deletes it.
    await tree.remove(`${root}/doc-state`);
  });
});
