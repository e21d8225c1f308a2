import { Redis as IoValkey } from 'iovalkey';
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { LockModuleOptions } from '../../src/index.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisServer } from '../support/redis-server.js';
import { until } from '../support/backends.js';
import { bootLockApp, commandCalls, sleep } from '../support/lock-app.js';

/** A client as the user makes it: connected, used, and closed by the user. */
interface PassedClient {
  client: NonNullable<LockModuleOptions['redis']>;
  ping(): Promise<unknown>;
  close(): Promise<unknown>;
}

/** How many connections the servers have open (CLIENT LIST, the asking one left out). */
async function connections(ports: number[]): Promise<number> {
  const counts = await Promise.all(
    ports.map(async (port) => {
      const admin = new Redis(port, '127.0.0.1');
      const list = (await admin.client('LIST')) as string;
      await admin.quit();
      return list.trim().split('\n').length - 1;
    }),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * A client passed as `redis` is the user's: the module uses it, opens what else it needs (a
 * subscriber connection) and closes only that. Its scripts go by SHA, and find their way back
 * after the server forgot them.
 */
describe.each<[string, (url: string) => Promise<PassedClient>]>([
  [
    'a node-redis client (RESP3, the default of node-redis 6)',
    async (url) => {
      const client = await createClient({ url }).connect();
      return { client, ping: () => client.ping(), close: () => client.close() };
    },
  ],
  [
    'a node-redis client in RESP2 (the default of node-redis 5)',
    async (url) => {
      const client = await createClient({ url, RESP: 2 }).connect();
      return { client, ping: () => client.ping(), close: () => client.close() };
    },
  ],
  [
    'an iovalkey client',
    async (url) => {
      const client = new IoValkey(url);
      return { client, ping: () => client.ping(), close: () => client.quit() };
    },
  ],
])('%s passed as redis', (_, connect) => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin.quit();
    await server.stop();
  });

  it('serves locks and wake-ups, and stays open after the app closes, with what the module opened closed', async () => {
    const passed = await connect(server.url);
    await passed.ping();
    const before = await connections([server.port]);
    const [a, b] = [
      await bootLockApp({ redis: passed.client }),
      await bootLockApp({ redis: passed.client }),
    ];
    const held = await a.locks.acquire('shared', { ttl: 60_000 });
    const waited = b.locks.acquire('shared', { waitTimeout: 20_000 });
    await sleep(200);
    await held.release();
    const lock = await waited;
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
    await Promise.all([a.close(), b.close()]);
    expect(await passed.ping()).toBe('PONG');
    expect(await connections([server.port])).toBe(before);
    await passed.close();
  });

  it('runs its scripts by SHA, and again after the server forgot them (SCRIPT FLUSH)', async () => {
    const passed = await connect(server.url);
    const app = await bootLockApp({ redis: passed.client });
    try {
      await app.locks.using('by-sha', () => undefined);
      const bySha = await commandCalls(admin, 'evalsha');
      await app.locks.using('by-sha', () => undefined);
      expect(await commandCalls(admin, 'evalsha')).toBeGreaterThan(bySha);
      await admin.script('FLUSH');
      const first = await app.locks.acquire('flushed');
      const second = await app.locks.acquire('flushed:2');
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      expect(await Promise.all([first.release(), second.release()])).toEqual([true, true]);
    } finally {
      await app.close();
      await passed.close();
    }
  });
});

describe('a node-redis Cluster client passed as redis', () => {
  let cluster: RedisClusterHarness;

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start(3);
  }, 60_000);

  afterAll(async () => {
    await cluster.stop();
  });

  it('routes each lock to its master, wakes through sharded pub/sub, and stays open after the app closes', async () => {
    const client = createCluster({
      rootNodes: cluster.nodes.map(({ host, port }) => ({ socket: { host, port } })),
    });
    await client.connect();
    const before = await connections(cluster.ports);
    const [a, b] = [await bootLockApp({ redis: client }), await bootLockApp({ redis: client })];
    const keys = Array.from({ length: 12 }, (_, i) => `order:${i}`);
    const locks = await Promise.all(keys.map((key) => a.locks.acquire(key, { ttl: 60_000 })));
    const homes = await Promise.all(locks.map((lock) => cluster.portForKey(lock.key)));
    expect(new Set(homes).size).toBe(3);
    const waited = b.locks.acquire(keys[0], { waitTimeout: 20_000 });
    waited.catch(() => undefined);
    const owner = new Redis(homes[0], '127.0.0.1');
    const subscribers = async () =>
      ((await owner.call('PUBSUB', 'SHARDNUMSUB', locks[0].key)) as [string, number])[1];
    await until(async () => (await subscribers()) === 1, 10_000);
    await owner.quit();
    await Promise.all(locks.map((lock) => lock.release()));
    await (await waited).release();
    await Promise.all([a.close(), b.close()]);
    expect(client.isOpen).toBe(true);
    expect(await connections(cluster.ports)).toBe(before);
    await client.close();
  });
});
