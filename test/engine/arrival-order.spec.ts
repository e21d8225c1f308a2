import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { MemoryLockSpace } from '../../src/index.js';
import { readersTogether, releaserAsksAgain, servedInOrder } from '../support/arrival-order.js';
import { bootLockApp, rawClient, sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';
import { inProcess, LockProcess, type Contender } from '../support/lock-child.js';
import { PostgresServer } from '../support/postgres-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';
import { byTier } from '../support/tiers.js';

/** Three app instances on one store, and what is left of their locks once they are done. */
interface Instances {
  contenders: Contender[];
  /** What the store still has of the test's locks (nothing, once every lock is released). */
  residue(): Promise<string[]>;
  close(): Promise<void>;
}

const WAIT = { waitTimeout: 30_000 };

async function redisProcesses(): Promise<Instances> {
  const keyPrefix = uniquePrefix();
  const processes = await Promise.all(
    [0, 1, 2].map(() => LockProcess.start({ redis: sharedRedisUrl(), keyPrefix, ...WAIT })),
  );
  const redis = rawClient(sharedRedisUrl());
  return {
    contenders: processes,
    // Lock keys, and the keys kept beside them (queues, leases, holders), tagged with theirs;
    // not the prefix's fencing counter, which stays by design.
    residue: async () =>
      [...(await redis.keys(`${keyPrefix}*`)), ...(await redis.keys(`{${keyPrefix}*`))].filter(
        (key) => key !== `{${keyPrefix}}:fence`,
      ),
    close: async () => {
      await Promise.all(processes.map((instance) => instance.close()));
      await redis.quit();
    },
  };
}

async function zookeeperProcesses(): Promise<Instances> {
  const server = await ZooKeeperServer.start();
  const tree = await ZooKeeperTree.connect(server.address);
  const root = `/order-${randomBytes(4).toString('hex')}`;
  const zookeeper = { connectionString: server.address, sessionTimeout: 4_000, root };
  const processes = await Promise.all(
    [0, 1, 2].map(() => LockProcess.start({ zookeeper, ...WAIT })),
  );
  return {
    contenders: processes,
    residue: () => tree.below(root),
    close: async () => {
      await Promise.all(processes.map((instance) => instance.close()));
      tree.close();
      await server.stop();
    },
  };
}

async function postgresProcesses(): Promise<Instances> {
  const server = await PostgresServer.start();
  const db = new pg.Pool({ connectionString: server.url, max: 1 });
  const processes = await Promise.all(
    [0, 1, 2].map(() => LockProcess.start({ postgres: server.url, ...WAIT })),
  );
  return {
    contenders: processes,
    residue: async () =>
      (
        await db.query<{ key: string }>(
          'SELECT key FROM nestjs_lock UNION ALL SELECT key FROM nestjs_lock_queue',
        )
      ).rows.map(({ key }) => key),
    close: async () => {
      await Promise.all(processes.map((instance) => instance.close()));
      await db.end();
      await server.stop();
    },
  };
}

/** The memory store serves one process: its instances are modules of the test's own. */
async function memoryInstances(): Promise<Instances> {
  const memorySpace = new MemoryLockSpace();
  const apps = await Promise.all(
    [0, 1, 2].map(() => bootLockApp({ store: 'memory', memorySpace, ...WAIT })),
  );
  const { locks, queues, lines, holders } = memorySpace.state;
  return {
    contenders: apps.map((app) => inProcess(app.locks)),
    residue: async () => [locks, queues, lines, holders].flatMap((entries) => [...entries.keys()]),
    close: async () => {
      await Promise.all(apps.map((app) => app.close()));
    },
  };
}

/** Each workload runs a few times: the order must hold in every run. */
const TRIALS = 3;

describe.each(
  byTier({
    quick: [
      ['Redis, an instance per process', redisProcesses],
      ['memory, instances in one process', memoryInstances],
    ],
    all: [
      ['ZooKeeper, an instance per process', zookeeperProcesses],
      ['PostgreSQL, an instance per process', postgresProcesses],
    ],
  }),
)('first come, first served across instances (%s)', (_, start) => {
  let instances: Instances;

  beforeAll(async () => {
    instances = await start();
  });

  afterEach(async () => {
    expect(await instances.residue()).toEqual([]);
  });

  afterAll(() => instances?.close());

  it('serves a mutex’s waiters in the order they came, those of one instance not waiting for their turn in it', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const served = await servedInOrder(instances.contenders, `mutex:${trial}`);
      expect(served).toEqual(['A1', 'A2', 'A3', 'A4', 'B1']);
    }
  });

  it('gives a semaphore’s permits in the order the callers came, whatever their instance', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const served = await servedInOrder(instances.contenders, `permits:${trial}`, 2);
      expect(served).toEqual(['A1', 'A2', 'A3', 'A4', 'B1']);
    }
  });

  it('lets readers of one instance in together before a writer of another that came later', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const { withFirst, served } = await readersTogether(instances.contenders, `rw:${trial}`);
      expect(withFirst).toEqual(['R1', 'R2']);
      expect(served).toEqual(['R1', 'R2', 'W2']);
    }
  });

  it('does not let a holder that releases and asks again at once pass those already waiting', async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const served = await releaserAsksAgain(instances.contenders, `again:${trial}`);
      expect(served).toEqual(['mine', 'theirs', 'again']);
    }
  });
});
