import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
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
import { aborted, bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import { until } from '../support/backends.js';
import { holderIn } from '../support/lock-value.js';

const TTL = 1_000;

/** Two instances on the same store, `scheduler` and `worker`: one hands a lock off, the other adopts it. */
async function pair(options: LockModuleOptions, apps: LockApp[]): Promise<LockService[]> {
  for (const instanceId of ['scheduler', 'worker']) {
    apps.push(await bootLockApp({ ttl: TTL, instanceId, ...options }));
  }
  return apps.map((app) => app.locks);
}

/**
 * The hand-off as a scheduler and its worker do it, then the worker's release. An altered
 * handle is refused first, and the genuine one, once adopted, is refused to the scheduler.
 */
async function handOver(scheduler: LockService, worker: LockService, key: string) {
  const lock = await scheduler.acquire(key);
  const lost = aborted(lock);
  const handle = JSON.parse(JSON.stringify(await lock.handOff())) as LockHandle;
  expect(await lost).toBeInstanceOf(LockLostError);
  const forged = { ...handle, fencingToken: handle.fencingToken + 1 };
  await expect(worker.adopt(forged)).rejects.toThrow(LockOptionsError);
  const adopted = await worker.adopt(handle);
  expect(adopted.fencingToken).toBe(lock.fencingToken);
  expect((await scheduler.inspect(key)).holders).toMatchObject([
    { owner: 'worker', fencingToken: lock.fencingToken },
  ]);
  await expect(scheduler.adopt(handle)).rejects.toThrow(LockLostError);
  await sleep(TTL * 4);
  expect(adopted.signal.aborted).toBe(false);
  expect(await scheduler.tryAcquire(key)).toBeNull();
  expect(await lock.release()).toBe(false);
  expect(await adopted.release()).toBe(true);
  expect(await scheduler.isLocked(key)).toBe(false);
  await expect(worker.adopt(handle)).rejects.toThrow(LockLostError);
  expect(await scheduler.isLocked(key)).toBe(false);
}

/** Runs `command` on `master` behind the library's back. */
async function onMaster<T>(master: RedisServer, command: (client: Redis) => Promise<T>) {
  const client = rawClient(master.url);
  try {
    return await command(client);
  } finally {
    await client.quit();
  }
}

/** The token that holds `key` on `master`. */
const holderOn = (master: RedisServer, key: string) =>
  onMaster(master, async (client) => holderIn(await client.get(key)));

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
    expect((await worker.inspect('job')).holders).toMatchObject([{ owner: 'worker' }]);
    await expect(scheduler.adopt(handle)).rejects.toThrow(LockLostError);
    await sleep(TTL * 3);
    expect(adopted.signal.aborted).toBe(false);
    expect(await adopted.release()).toBe(true);
  });

  it('withdraws the hold from the masters that moved it when a majority refuses the adoption', async () => {
    const [scheduler, worker] = await pair(
      { redis: masters.map((master) => master.url), nodeTimeout: 250 },
      apps,
    );
    const lock = await scheduler.acquire('job');
    const handle = await lock.handOff();
    // Gone on two masters (evicted), still there on one, which moves it to the adopter.
    await Promise.all(masters.slice(1).map((master) => onMaster(master, (c) => c.del(lock.key))));
    await expect(worker.adopt(handle, { ttl: 30_000 })).rejects.toThrow(LockLostError);
    await until(async () => (await holderOn(masters[0], lock.key)) === null, 5_000);
    const next = await scheduler.tryAcquire('job');
    expect(next?.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(await next?.release()).toBe(true);
  });

  it('gives the lock to one of two instances that adopt one handle at once, the majority deciding', async () => {
    const [scheduler, worker] = await pair(
      { redis: masters.map((master) => master.url), nodeTimeout: 250 },
      apps,
    );
    const lock = await scheduler.acquire('job');
    const handle = await lock.handOff();
    const results = await Promise.allSettled([worker.adopt(handle), scheduler.adopt(handle)]);
    const adopted = results.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    expect(adopted).toHaveLength(1);
    const refused = results.find((result) => result.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(LockLostError);
    // The loser's moves on a minority of masters were withdrawn: the winner's renewals keep
    // the lock, and put it back where it was missing.
    await sleep(TTL * 3);
    expect(adopted[0].signal.aborted).toBe(false);
    const holders = await Promise.all(masters.map((master) => holderOn(master, lock.key)));
    expect(holders).toEqual([adopted[0].token, adopted[0].token, adopted[0].token]);
    expect(await adopted[0].release()).toBe(true);
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
