import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cluster, Redis } from 'ioredis';
import {
  LockModule,
  LockOptionsError,
  LockService,
  StaleFencingTokenError,
  WithLock,
  type Lock,
} from '../../src/index.js';
import { slotOf } from '../../src/store/redis/cluster-slots.js';
import { fenceKeyOf, sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';

/** A real 3-master Redis Cluster, started from `redis-server --cluster-enabled yes` processes. */
describe('on a Redis Cluster', () => {
  let cluster: RedisClusterHarness;
  let client: Cluster;
  const apps: LockApp[] = [];
  /** Keys spread over all three masters' slots. */
  const keys = Array.from({ length: 30 }, (_, i) => `order:${i}`);

  const boot = async (options = {}) => {
    const app = await bootLockApp({ redis: { cluster: cluster.nodes }, ...options });
    apps.push(app);
    return app;
  };
  /** Runs `look` on a connection to the master that owns `key`'s slot. */
  const onOwner = async <T>(key: string, look: (node: Redis) => Promise<T>): Promise<T> => {
    const node = new Redis(await cluster.portForKey(key), '127.0.0.1');
    try {
      return await look(node);
    } finally {
      await node.quit();
    }
  };

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start(3);
    client = new Cluster(cluster.nodes);
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  afterAll(async () => {
    await client.quit();
    await cluster.stop();
  });

  it('spreads locks over every master, each with its side keys in its own slot', async () => {
    const app = await boot();
    const locks = await Promise.all(keys.map((key) => app.locks.acquire(key)));
    const owners = new Set(await Promise.all(keys.map((key) => cluster.portForKey(`lock:${key}`))));
    expect(owners.size).toBe(3);
    for (const lock of locks.slice(0, 5)) {
      const counter = fenceKeyOf(lock.key, 'lock:', true);
      const [value, fence, slots] = await onOwner(lock.key, (node) =>
        Promise.all([
          node.get(lock.key),
          node.get(counter),
          Promise.all([lock.key, counter].map((key) => node.cluster('KEYSLOT', key))),
        ]),
      );
      expect(value).toBe(`${lock.token} ${lock.fencingToken}`);
      expect(Number(fence)).toBeGreaterThanOrEqual(lock.fencingToken);
      expect(slots[1]).toBe(slots[0]);
    }
    expect((await Promise.all(locks.map((lock) => lock.release()))).every(Boolean)).toBe(true);
    expect(await client.exists(locks[0].key)).toBe(0);
  });

  it('leaves one fencing counter per hash slot used, however many keys', async () => {
    const app = await boot();
    const allKeys = async () => {
      const nodes = cluster.ports.map((port) => new Redis(port, '127.0.0.1'));
      try {
        return (await Promise.all(nodes.map((node) => node.keys('*')))).flat();
      } finally {
        await Promise.all(nodes.map((node) => node.quit()));
      }
    };
    const before = new Set(await allKeys());
    // Half of them share one hash tag, so at most 301 slots for 600 keys.
    const names = Array.from({ length: 600 }, (_, i) =>
      i % 2 === 0 ? `{cart:1}:item:${i}` : `request:${i}`,
    );
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => app.locks.using(name, () => 0)));
    }
    const left = (await allKeys()).filter((key) => !before.has(key));
    const slots = new Set(names.map((name) => slotOf(`lock:${name}`)));
    expect(left.every((key) => /^\{lock:[0-9a-zA-Z]{3}\}:fence$/.test(key))).toBe(true);
    expect(new Set(left.map(slotOf)).size).toBe(left.length);
    expect(left.length).toBeLessThanOrEqual(slots.size);
  });

  it('renews locks in many slots at once without a cross-slot error', async () => {
    const app = await boot();
    // Several renewals of each within the sleep; a TTL long enough that a loaded machine's
    // stalls do not make the renewals late.
    const locks = await Promise.all(keys.map((key) => app.locks.acquire(key, { ttl: 1_500 })));
    await sleep(3_000);
    expect(locks.filter((lock) => lock.signal.aborted)).toEqual([]);
    const pttls = await Promise.all(locks.map((lock) => client.pttl(lock.key)));
    expect(Math.min(...pttls)).toBeGreaterThan(0);
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('keeps semaphores and read-write locks in the slot of their key, on every master', async () => {
    const [a, b] = [await boot(), await boot()];
    const names = keys.slice(0, 9);
    let inside = 0;
    let most = 0;
    const permits: Lock[] = [];
    await Promise.all(
      names.flatMap((name) =>
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? a : b).locks.using(
            name,
            async (lock) => {
              if (i === 0) permits.push(lock);
              inside++;
              most = Math.max(most, inside);
              await sleep(5);
              inside--;
            },
            { limit: 2, waitTimeout: 20_000 },
          ),
        ),
      ),
    );
    // 9 keys of 2 permits each: at most 18 inside at once.
    expect(most).toBeLessThanOrEqual(18);
    expect(most).toBeGreaterThan(2);
    const reader = await a.locks.acquire(keys[9], { mode: 'read', ttl: 300 });
    const sharer = await b.locks.acquire(keys[9], { mode: 'read', ttl: 300 });
    const mutexes = await Promise.all(
      keys.slice(10, 20).map((key) => a.locks.acquire(key, { ttl: 300 })),
    );
    // Renewed together with mutexes of other slots, many TTLs long.
    await sleep(1_200);
    expect([reader, sharer, ...mutexes].filter((lock) => lock.signal.aborted)).toEqual([]);
    expect(await b.locks.tryAcquire(keys[9], { mode: 'write' })).toBeNull();
    const slots = await onOwner(reader.key, (node) =>
      Promise.all(
        [
          reader.key,
          ...(['holders', 'line', 'places'] as const).map((role) => sideKeyOf(reader.key, role)),
        ].map((key) => node.cluster('KEYSLOT', key)),
      ),
    );
    expect(new Set(slots).size).toBe(1);
    await Promise.all([reader, sharer, ...mutexes].map((lock) => lock.release()));
    expect(await client.exists(reader.key, sideKeyOf(reader.key, 'holders'))).toBe(0);
    expect(permits).toHaveLength(9);
  });

  it.each([true, false])(
    'wakes a waiter through sharded pub/sub on the owning master (fair: %s)',
    async (fair) => {
      const [a, b] = [await boot({ fair }), await boot({ fair })];
      const held = await a.locks.acquire('wake', { ttl: 60_000 });
      const waited = b.locks.acquire('wake', { waitTimeout: 30_000 });
      await sleep(300);
      expect(
        await onOwner(held.key, (node) => node.call('PUBSUB', 'SHARDNUMSUB', held.key)),
      ).toEqual([held.key, 1]);
      await held.release();
      const lock = await waited;
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await lock.release();
    },
  );

  it('falls back to plain pub/sub with an ioredis that cannot subscribe to shards', async () => {
    // ioredis before 5.6 has no `shardedSubscribers` option.
    const old = new Cluster(cluster.nodes);
    delete (old.options as { shardedSubscribers?: boolean }).shardedSubscribers;
    const [a, b] = [await boot({ redis: old }), await boot({ redis: old })];
    try {
      const held = await a.locks.acquire('plain', { ttl: 60_000 });
      const waited = b.locks.acquire('plain', { waitTimeout: 30_000 });
      await sleep(300);
      const subscribers = await Promise.all(
        cluster.ports.map(async (port) => {
          const node = new Redis(port, '127.0.0.1');
          const [, count] = (await node.pubsub('NUMSUB', held.key)) as [string, number];
          await node.quit();
          return Number(count);
        }),
      );
      expect(subscribers.reduce((sum, count) => sum + count, 0)).toBe(1);
      await held.release();
      const lock = await waited;
      await lock.release();
    } finally {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await old.quit();
    }
  });

  it('takes a multi-key lock whose keys live in different slots', async () => {
    @Injectable()
    class Transfers {
      constructor(readonly locks: LockService) {}

      @WithLock(['account:<from>', 'account:<to>'])
      async move(from: string, to: string): Promise<string> {
        return `${from}→${to} under ${(this.locks.current() as Lock).key}`;
      }
    }
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: client })],
      providers: [Transfers],
    }).compile();
    await module.init();
    try {
      const transfers = module.get(Transfers);
      expect(await cluster.portForKey('lock:account:alice')).not.toBe(
        await cluster.portForKey('lock:account:bob'),
      );
      expect(await transfers.move('alice', 'bob')).toBe('alice→bob under lock:account:alice');
      expect(await client.exists('lock:account:alice')).toBe(0);
      expect(await client.exists('lock:account:bob')).toBe(0);
    } finally {
      await module.close();
    }
    // The module leaves a client it was given open.
    expect(client.status).toBe('ready');
  });

  it('guards a fenced resource in the slot of its key', async () => {
    const app = await boot();
    const first = await app.locks.acquire('doc');
    await first.release();
    const second = await app.locks.acquire('doc');
    await app.locks.writeFenced('doc:body', 'new', second.fencingToken);
    await expect(
      app.locks.writeFenced('doc:body', 'old', first.fencingToken),
    ).rejects.toBeInstanceOf(StaleFencingTokenError);
    expect(await client.get('doc:body')).toBe('new');
    await second.release();
    await client.del('doc:body', '{doc:body}:fenced');
  });

  it("works with a Cluster client of another copy of ioredis (a monorepo's second install)", async () => {
    // The same code under another class: what `instanceof Cluster` sees of a second copy.
    const foreign = new Cluster(cluster.nodes);
    const otherCopy = Object.create(Object.getPrototypeOf(Cluster.prototype) as object) as object;
    Object.defineProperties(otherCopy, Object.getOwnPropertyDescriptors(Cluster.prototype));
    Object.setPrototypeOf(foreign, otherCopy);
    expect(foreign).not.toBeInstanceOf(Cluster);
    const app = await bootLockApp({ redis: foreign, keyPrefix: uniquePrefix() });
    try {
      const locks = await Promise.all(keys.slice(0, 6).map((key) => app.locks.acquire(key)));
      expect(
        new Set(await Promise.all(locks.map((lock) => cluster.portForKey(lock.key)))).size,
      ).toBeGreaterThan(1);
      const waiter = app.locks.acquire(keys[0], { waitTimeout: 10_000 });
      await locks[0].release();
      await (await waiter).release();
      await Promise.all(locks.slice(1).map((lock) => lock.release()));
    } finally {
      await app.close();
      await foreign.quit();
    }
  });

  it('refuses a Cluster client with an ioredis keyPrefix at boot', async () => {
    const prefixed = new Cluster(cluster.nodes, { keyPrefix: 'app:', lazyConnect: true });
    try {
      await expect(bootLockApp({ redis: prefixed })).rejects.toBeInstanceOf(LockOptionsError);
    } finally {
      prefixed.disconnect();
    }
  });
});
