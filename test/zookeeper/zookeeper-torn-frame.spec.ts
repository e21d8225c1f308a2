import { randomBytes } from 'node:crypto';
import { bootLockApp, type LockApp } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

/**
 * A connection to ZooKeeper that ends in the middle of an answer (the server paused or died
 * mid-write, a proxy cut it): the client reconnects in the same session, and what it reads on
 * the new connection must not be glued to the stale part of the old one's frame. Read that way,
 * the first answer of the new connection is garbage: the client library threw out of its socket
 * handler (an uncaught exception in the app) or waited for bytes that never come.
 */
describe('ZooKeeper: a connection that ends in the middle of an answer', () => {
  const root = `/torn-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  let proxy: TcpProxy;
  let app: LockApp;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    tree = await ZooKeeperTree.connect(server.address);
    proxy = await TcpProxy.start(server.port);
    app = await bootLockApp({
      zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, sessionTimeout: 20_000, root },
    });
  });

  afterAll(async () => {
    await app.close();
    await proxy.stop();
    tree.close();
    await server.stop();
  });

  it.each([1, 3, 6, 17])(
    'reconnects in the same session and serves the next lock, %i bytes of the answer read',
    async (bytes) => {
      const key = `torn-${bytes}`;
      await (await app.locks.acquire(key)).release();
      proxy.tearNextAnswer(bytes);
      const lock = await app.locks.acquire(key, { waitTimeout: 15_000 });
      expect(await tree.children(`${root}/lock:${key}`)).toHaveLength(1);
      await lock.release();
      expect(await tree.children(`${root}/lock:${key}`)).toEqual([]);
    },
  );
});
