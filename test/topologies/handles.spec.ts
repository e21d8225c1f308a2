import { randomBytes } from 'node:crypto';
import {
  LockLostError,
  LockOptionsError,
  type LockHandle,
  type LockModuleOptions,
  type LockService,
} from '../../src/index.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisServer } from '../support/redis-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { aborted, bootLockApp, sleep, type LockApp } from '../support/lock-app.js';

const TTL = 1_000;

/** Two instances on the same store: one hands a lock off, the other adopts it. */
async function pair(options: LockModuleOptions, apps: LockApp[]): Promise<LockService[]> {
  for (let i = 0; i < 2; i++) apps.push(await bootLockApp({ ttl: TTL, ...options }));
  return apps.map((app) => app.locks);
}

/** The hand-off as a scheduler and its worker do it, then the worker's release. */
async function handOver(scheduler: LockService, worker: LockService, key: string) {
  const lock = await scheduler.acquire(key);
  const lost = aborted(lock);
  const handle = JSON.parse(JSON.stringify(await lock.handOff())) as LockHandle;
  expect(await lost).toBeInstanceOf(LockLostError);
  const adopted = await worker.adopt(handle);
  expect(adopted.fencingToken).toBe(lock.fencingToken);
  await sleep(TTL * 4);
  expect(adopted.signal.aborted).toBe(false);
  expect(await scheduler.tryAcquire(key)).toBeNull();
  expect(await lock.release()).toBe(false);
  expect(await adopted.release()).toBe(true);
  expect(await scheduler.isLocked(key)).toBe(false);
  await expect(worker.adopt(handle)).rejects.toThrow(LockLostError);
  expect(await scheduler.isLocked(key)).toBe(false);
}

describe('handing locks over on RedLock (3 masters)', () => {
  let masters: RedisServer[];
  const apps: LockApp[] = [];

  beforeEach(async () => {
    masters = await Promise.all([1, 2, 3].map(() => RedisServer.start()));
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await Promise.all(masters.map((master) => master.stop()));
  });

  it('adopts across the masters, the majority deciding', async () => {
    const [scheduler, worker] = await pair(
      { redis: masters.map((master) => master.url), nodeTimeout: 250 },
      apps,
    );
    await handOver(scheduler, worker, 'job');
  });

  it('adopts while a minority of masters is down', async () => {
    const [scheduler, worker] = await pair(
      { redis: masters.map((master) => master.url), nodeTimeout: 250 },
      apps,
    );
    const lock = await scheduler.acquire('job');
    const handle = await lock.handOff();
    await masters[0].stop();
    const adopted = await worker.adopt(handle);
    await sleep(TTL * 3);
    expect(adopted.signal.aborted).toBe(false);
    expect(await adopted.release()).toBe(true);
  });
});

describe('handing locks over on a Redis Cluster', () => {
  let cluster: RedisClusterHarness;
  const apps: LockApp[] = [];

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start(3);
  });

  afterAll(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await cluster.stop();
  });

  it('adopts in another instance, on whichever master owns the key', async () => {
    const [scheduler, worker] = await pair({ redis: { cluster: cluster.nodes } }, apps);
    for (const key of ['order:1', 'order:2', 'order:3']) await handOver(scheduler, worker, key);
  });
});

describe('handing locks over on ZooKeeper', () => {
  let server: ZooKeeperServer;
  const apps: LockApp[] = [];
  const root = `/locks-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
  });

  afterAll(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await server.stop();
  });

  it('refuses both ends at the call, and the lock stays held where it was taken', async () => {
    const zookeeper = { connectionString: server.address, sessionTimeout: 4_000, root };
    const [scheduler, worker] = await pair({ zookeeper }, apps);
    const lock = await scheduler.acquire('job');
    await expect(lock.handOff()).rejects.toThrow(LockOptionsError);
    await expect(lock.handOff()).rejects.toThrow(/session that created it/);
    expect(lock.signal.aborted).toBe(false);
    const handle = { name: 'job', key: lock.key, token: lock.token, fencingToken: 1, ttl: TTL };
    await expect(worker.adopt(handle)).rejects.toThrow(LockOptionsError);
    expect(await lock.release()).toBe(true);
  });
});
