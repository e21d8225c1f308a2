import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { MemoryLockSpace, type LockModuleOptions } from '../../src/index.js';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { rawClient, sharedRedisUrl } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisSentinelHarness } from '../support/redis-sentinel.js';
import { glideClient } from '../support/glide.js';
import { RedisServer, valkeyServer } from '../support/redis-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';
import { OwnStore } from '../support/own-store.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';

/**
 * One backend as the store-contract spec drives it: the module options of an app instance, and
 * a look behind the library's back at what the store holds. Lock keys in the spec are plain
 * (letters, digits and `:`), so a key is also its ZooKeeper node name.
 */
export interface ContractBackend {
  /** The module options of one app instance whose keys begin with `keyPrefix`. */
  options(keyPrefix: string): LockModuleOptions;
  /**
   * Deletes the lock that `token` holds on full key `key`, as an eviction, an operator's DEL
   * or a lost session would, without the holder's knowledge.
   */
  evict(key: string, token: string): Promise<void>;
  /** How many callers hold a place in the store's line for the mutex on full key `key`. */
  waiting(key: string): Promise<number>;
  /**
   * What the store keeps for keys beginning with `keyPrefix`, leaving out what is documented
   * to stay (the prefix's fencing counters on Redis): [] once every lock is released.
   */
  residue(keyPrefix: string): Promise<string[]>;
  /** Stops what {@link ContractFixture.start} started (servers, connections). */
  stop(): Promise<void>;
}

/** How the spec gets a backend: started once per describe block. */
export type ContractFixture = [name: string, start: () => Promise<ContractBackend>];

/**
 * A backend on Redis servers. `homes` are the clients on which a lock key lives (one server,
 * a routing Cluster client, or every RedLock master); `servers` are one client per server, whose
 * keys are listed for residue.
 */
function redisBackend(
  options: LockModuleOptions,
  homes: (Redis | Cluster)[],
  servers: Redis[],
  stopServers: () => Promise<unknown> = async () => undefined,
): ContractBackend {
  return {
    options: (keyPrefix) => ({ ...options, keyPrefix }),
    evict: async (key) => {
      await Promise.all(homes.map((home) => home.del(key)));
    },
    waiting: (key) => homes[0].zcard(sideKeyOf(key, 'queue')),
    residue: async (keyPrefix) => {
      const counter = new RegExp(`^\\{${escapeRegExp(keyPrefix)}[^{}]*\\}:fence$`);
      const keys = await Promise.all(
        servers.flatMap((server) => [server.keys(`${keyPrefix}*`), server.keys(`{${keyPrefix}*`)]),
      );
      return keys.flat().filter((key) => !counter.test(key));
    },
    stop: async () => {
      const clients = new Set([...homes, ...servers]);
      await Promise.all([...clients].map((client) => client.quit()));
      await stopServers();
    },
  };
}

/**
 * The Redis that the whole suite shares, each test under a prefix of its own.
 * @param redisClient the client library the module connects through
 */
function singleRedis(redisClient?: LockModuleOptions['redisClient']) {
  return async (): Promise<ContractBackend> => {
    const url = sharedRedisUrl();
    const client = rawClient(url);
    return redisBackend({ redis: url, redisClient }, [client], [client]);
  };
}

function redisCluster(redisClient?: LockModuleOptions['redisClient']) {
  return async (): Promise<ContractBackend> => {
    const cluster = await RedisClusterHarness.start(3);
    const routing = new Cluster(cluster.nodes);
    const nodes = cluster.ports.map((port) => new Redis(port, '127.0.0.1'));
    const options = { redis: { cluster: cluster.nodes }, redisClient };
    return redisBackend(options, [routing], nodes, () => cluster.stop());
  };
}

function redisSentinel(redisClient?: LockModuleOptions['redisClient']) {
  return async (): Promise<ContractBackend> => {
    const sentinel = await RedisSentinelHarness.start();
    const master = new Redis(sentinel.masterPort, '127.0.0.1');
    const options = { redis: { sentinels: sentinel.sentinels, name: sentinel.name }, redisClient };
    return redisBackend(options, [master], [master], () => sentinel.stop());
  };
}

/**
 * RedLock over three independent redis-servers, through ioredis or GLIDE clients. A GLIDE
 * client's first request creates it, which took a loaded machine more than 250 ms.
 */
function redlock(redisClient?: 'glide') {
  return async (): Promise<ContractBackend> => {
    const masters = await Promise.all([1, 2, 3].map(() => RedisServer.start()));
    const clients = masters.map((master) => rawClient(master.url));
    const nodeTimeout = redisClient === 'glide' ? 1_000 : 250;
    const options = { redis: masters.map((master) => master.url), nodeTimeout, redisClient };
    return redisBackend(options, clients, clients, () =>
      Promise.all(masters.map((master) => master.stop())),
    );
  };
}

/** A Valkey 8 server through ioredis. */
async function valkey(): Promise<ContractBackend> {
  const server = await valkeyServer();
  const client = rawClient(server.url);
  return redisBackend({ redis: server.url }, [client], [client], () => server.stop());
}

/**
 * A Valkey 8 server through a GLIDE client of the test's own, which every app instance of the
 * block is passed (and none closes); the module makes its subscriber client beside it.
 */
async function valkeyGlide(): Promise<ContractBackend> {
  const server = await valkeyServer();
  const client = rawClient(server.url);
  const glide = await glideClient(server.port);
  return redisBackend({ redis: glide }, [client], [client], async () => {
    glide.close();
    await server.stop();
  });
}

/** The memory store, on a space of its own that every app instance of the block shares. */
async function memory(): Promise<ContractBackend> {
  const space = new MemoryLockSpace();
  const { state } = space;
  return {
    options: (keyPrefix) => ({ store: 'memory', memorySpace: space, keyPrefix }),
    evict: async (key) => {
      state.locks.delete(key);
    },
    waiting: async (key) => state.queues.get(key)?.size ?? 0,
    residue: (keyPrefix) => residueOf(space, keyPrefix),
    stop: async () => undefined,
  };
}

/** What a memory space keeps for keys beginning with `keyPrefix`. */
async function residueOf(space: MemoryLockSpace, keyPrefix: string): Promise<string[]> {
  return Object.entries(space.state).flatMap(([field, value]: [string, unknown]) =>
    value instanceof Map
      ? [...(value as Map<unknown, unknown>).keys()]
          .filter((key) => String(key).startsWith(keyPrefix))
          .map((key) => `${field}: ${String(key)}`)
      : [],
  );
}

/**
 * A store of the app's own, as a third party would write one against the exported contract:
 * here a class that keeps its locks in a memory store of its own (a memory space every app
 * instance of the block shares), each app instance given a new one that the module closes.
 */
async function ownStore(): Promise<ContractBackend> {
  const backend = await memory();
  const space = new MemoryLockSpace();
  return {
    ...backend,
    options: (keyPrefix) => ({
      store: new OwnStore(new MemoryLockStore(true, space.state, keyPrefix)),
      keyPrefix,
    }),
    evict: async (key) => {
      space.state.locks.delete(key);
    },
    waiting: async (key) => space.state.queues.get(key)?.size ?? 0,
    residue: (keyPrefix) => residueOf(space, keyPrefix),
  };
}

/** A standalone ZooKeeper server, the block's locks under a root of their own. */
async function zooKeeper(): Promise<ContractBackend> {
  const server = await ZooKeeperServer.start();
  const tree = await ZooKeeperTree.connect(server.address);
  const root = `/contract-${randomBytes(4).toString('hex')}`;
  const zookeeper = { connectionString: server.address, sessionTimeout: 4_000, root };
  return {
    options: (keyPrefix) => ({ zookeeper, keyPrefix }),
    evict: async (key, token) => {
      const nodes = await tree.children(`${root}/${key}`);
      const held = nodes.find((name) => name.startsWith(`${token}-`));
      if (!held) throw new Error(`${token} has no node under ${root}/${key}`);
      await tree.remove(`${root}/${key}/${held}`);
    },
    waiting: async (key) => Math.max(0, (await tree.children(`${root}/${key}`)).length - 1),
    residue: async (keyPrefix) =>
      (await tree.below(root)).filter((path) => path.startsWith(keyPrefix)),
    stop: async () => {
      tree.close();
      await server.stop();
    },
  };
}

/** A throwaway PostgreSQL, the block's locks in tables of their own. */
async function postgres(): Promise<ContractBackend> {
  const server = await PostgresServer.start();
  const db = new pg.Pool({ connectionString: server.url, max: 2 });
  const table = `contract_${randomBytes(4).toString('hex')}`;
  const rows = async <Row extends object>(text: string, values: unknown[]) =>
    (await db.query<Row>(text, values)).rows;
  return {
    options: (keyPrefix) => ({ postgres: { connectionString: server.url, table }, keyPrefix }),
    evict: async (key, token) => {
      const gone = await rows(`DELETE FROM ${table} WHERE key = $1 AND token = $2 RETURNING 1`, [
        key,
        token,
      ]);
      if (gone.length !== 1) throw new Error(`${token} holds no row for ${key}`);
    },
    waiting: async (key) =>
      Number(
        (
          await rows<{ count: string }>(`SELECT count(*) FROM ${table}_queue WHERE key = $1`, [key])
        )[0].count,
      ),
    residue: async (keyPrefix) =>
      (
        await rows<{ row: string }>(
          `SELECT 'holder ' || key AS row FROM ${table} WHERE starts_with(key, $1)
           UNION ALL SELECT 'waiter ' || key FROM ${table}_queue WHERE starts_with(key, $1)`,
          [keyPrefix],
        )
      ).map(({ row }) => row),
    stop: async () => {
      await db.end();
      await server.stop();
    },
  };
}

/**
 * Every backend the library has, for `describe.each`, by test tier: the quick tier's need
 * nothing but redis-server. A new backend joins the contract with one entry here.
 */
export const contractFixtures: { quick: ContractFixture[]; all: ContractFixture[] } = {
  quick: [
    ['Redis', singleRedis()],
    ['memory', memory],
    ['a store of the app’s own', ownStore],
  ],
  all: [
    ['Redis Cluster', redisCluster()],
    ['Redis Sentinel', redisSentinel()],
    ['Redis through node-redis', singleRedis('node-redis')],
    ['Redis Cluster through node-redis', redisCluster('node-redis')],
    ['Redis Sentinel through node-redis', redisSentinel('node-redis')],
    ['Redis through iovalkey', singleRedis('iovalkey')],
    ['Redis Cluster through iovalkey', redisCluster('iovalkey')],
    ['Redis through GLIDE', singleRedis('glide')],
    ['Redis Cluster through GLIDE', redisCluster('glide')],
    ['RedLock', redlock()],
    ['RedLock through GLIDE', redlock('glide')],
    ['Valkey 8', valkey],
    ['Valkey 8 through a GLIDE client', valkeyGlide],
    ['ZooKeeper', zooKeeper],
    ['PostgreSQL', postgres],
  ],
};

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
