import { randomBytes } from 'node:crypto';
import { newToken } from '../../src/engine/token.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import { kindOf } from '../../src/store/lock-kind.js';
import type { LockStore } from '../../src/store/lock-store.interface.js';
import type { ZooKeeperNodes } from '../../src/store/zookeeper/zookeeper-nodes.js';
import { until } from '../support/backends.js';
import { bootLockApp, type LockApp } from '../support/lock-app.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/**
 * The store of `app`, whose answers to attempts the test can hold back, as a busy process
 * hears them late: the store's calls are made and its watches set meanwhile, so the turns they
 * bring can come before the answer. It also records the turns the store announces for `key`.
 */
async function heldBack(app: LockApp, key: string) {
  const store = app.module.get<{ store: LockStore }>(LOCK_ENGINE).store;
  const acquire = store.acquire.bind(store);
  const answered = new Map<string, number>();
  const tokens = new Map<string, string>();
  let hold: { tag: string; held: () => void } | undefined;
  let letGo = () => {};
  store.acquire = async (lockKey, token, ...rest) => {
    const answer = await acquire(lockKey, token, ...rest);
    const tag = token.slice(0, 2);
    answered.set(tag, (answered.get(tag) ?? 0) + 1);
    tokens.set(tag, token);
    if (hold?.tag === tag) {
      const { held } = hold;
      hold = undefined;
      await new Promise<void>((resolve) => {
        letGo = resolve;
        held();
      });
    }
    return answer;
  };
  const turns: string[] = [];
  const unsubscribe = await store.subscribe(`lock:${key}`, (event) => {
    if (event.type === 'turn') turns.push(event.token);
  });
  return {
    /** How many attempts of the app's callers of the kind with `tag` were answered. */
    answered: (tag: string) => answered.get(tag) ?? 0,
    /** Whether the store announced the turn of the app's last caller of that kind. */
    turnOf: (tag: string) => turns.includes(tokens.get(tag) ?? ''),
    /** Holds back the next answer to a caller of the kind with `tag`: resolves once it does. */
    holdNext: (tag: string) => new Promise<void>((held) => (hold = { tag, held })),
    letGo: () => letGo(),
    restore() {
      letGo();
      unsubscribe();
      store.acquire = acquire;
    },
  };
}

/**
 * Makes the first watch that `app`'s store sets from now on seen late: its answer is held back
 * until its watch has fired and `letGo` is called, as when the answer and the event come in
 * one read of the socket, the event last.
 */
function firstWatchSeenLate(app: LockApp) {
  const store = app.module.get<{ store: LockStore }>(LOCK_ENGINE).store;
  const { nodes } = store as unknown as { nodes: ZooKeeperNodes };
  const watchData = nodes.watchData.bind(nodes);
  const seen = { set: false, fired: false, letGo: () => {} };
  const late = new Promise<void>((resolve) => (seen.letGo = resolve));
  nodes.watchData = async (path, watcher) => {
    nodes.watchData = watchData;
    const answer = await watchData(path, (event) => {
      seen.fired = true;
      watcher(event);
    });
    seen.set = true;
    await late;
    return answer;
  };
  return seen;
}

describe('ZooKeeper backend: the turns of the waiters of one process', () => {
  const root = `/turns-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  /** Our process, and another one. */
  let app: LockApp;
  let another: LockApp;
  /** A node of a waiter of another process of the kind with `tag`, in the line of lock `key`. */
  const nodeOf = (key: string, tag: string) =>
    tree.createEphemeralSequential(`${root}/lock:${key}/${newToken(tag)}-`);
  const [reading, writing] = [kindOf({ mode: 'read' }).tag, kindOf({ mode: 'write' }).tag];

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    [app, another] = await Promise.all(
      [1, 2].map(() =>
        bootLockApp({
          zookeeper: { connectionString: server.address, sessionTimeout: 4_000, root },
          waitTimeout: 60_000,
        }),
      ),
    );
  });

  afterEach(async () => {
    expect(await tree.below(root)).toEqual([]);
  });

  afterAll(async () => {
    await Promise.all([app.close(), another.close()]);
    tree.close();
    await server.stop();
  });

  it('lets a reader try whose turn came while a writer of its process, refused, passed it', async () => {
    // The line: a writer, our reader, a reader, our writer. The first two go while our reader
    // makes an attempt: our writer's turn puts it first, but the reader is still ahead of it.
    const store = await heldBack(app, 'passed');
    try {
      const writer = await another.locks.acquire('passed', { mode: 'write' });
      const reader = app.locks.acquire('passed', { mode: 'read', waitTimeout: 10_000 });
      await until(async () => store.answered(reading) >= 2);
      const other = await nodeOf('passed', reading);
      const ours = app.locks.acquire('passed', { mode: 'write' });
      await until(async () => store.answered(writing) >= 1);
      await store.holdNext(reading);
      await writer.release();
      await until(async () => store.turnOf(reading));
      await tree.remove(other);
      await until(async () => store.turnOf(writing));
      store.letGo();
      const read = await reader.then((lock) => lock.release(), String);
      await (await ours).release();
      expect(read).toBe(true);
    } finally {
      store.restore();
    }
  });

  it('lets a reader try whose turn came before it joined the waiters of its process', async () => {
    // Its first attempt's answer and the writer's departure arrive in one read of the socket,
    // while a writer of its process, behind it in the line, already waits.
    const store = await heldBack(app, 'early');
    try {
      const writer = await another.locks.acquire('early', { mode: 'write' });
      const held = store.holdNext(reading);
      const reader = app.locks.acquire('early', { mode: 'read', waitTimeout: 10_000 });
      await held;
      const ours = app.locks.acquire('early', { mode: 'write' });
      // Its second attempt is its first as the head of the waiters of its process.
      await until(async () => store.answered(writing) >= 2);
      await writer.release();
      await until(async () => store.turnOf(reading));
      store.letGo();
      const read = await reader.then((lock) => lock.release(), String);
      await (await ours).release();
      expect(read).toBe(true);
    } finally {
      store.restore();
    }
  });

  it('lets a reader hold whose watch fired before it was seen, and before its process listened for the key', async () => {
    const store = await heldBack(app, 'unheard');
    try {
      const writer = await another.locks.acquire('unheard', { mode: 'write' });
      const watch = firstWatchSeenLate(app);
      const reader = app.locks.acquire('unheard', { mode: 'read', waitTimeout: 10_000 });
      await until(async () => watch.set);
      await writer.release();
      await until(async () => watch.fired);
      // A writer of its process, behind it in the line, is the first of its waiters.
      const ours = app.locks.acquire('unheard', { mode: 'write' });
      await until(async () => store.answered(writing) >= 2);
      watch.letGo();
      const read = await reader.then((lock) => lock.release(), String);
      await (await ours).release();
      expect(read).toBe(true);
    } finally {
      store.restore();
    }
  });
});
