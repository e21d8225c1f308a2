import { readFileSync } from 'node:fs';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  Leader,
  LeaderService,
  LockModule,
  LockNotAcquiredError,
  type Leadership,
  type LockModuleOptions,
} from '../../src/index.js';
import { until } from '../support/backends.js';
import { bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisServer } from '../support/redis-server.js';
import { holderIn } from '../support/lock-value.js';
import { onlyIn } from '../support/tiers.js';

/**
 * The commands a prefix-confined user needs, exactly as docs/acl.md gives them: what the
 * library sends (its scripts, what they call, pub/sub, EXISTS) and what ioredis sends when it
 * connects (INFO for its ready check).
 */
const COMMANDS =
  '-@all +eval +evalsha +get +set +del +exists +pexpire +pttl +time +zadd +zrem +zrange ' +
  '+zscore +zcard +zremrangebyscore +hset +hget +hdel +publish +subscribe +unsubscribe +info';

/** The ACL line of docs/acl.md for one user and lock prefix. */
const aclRules = (prefix: string) =>
  `resetkeys ~${prefix}* ~{${prefix}* resetchannels &${prefix}* &{${prefix}* ${COMMANDS}`;

/** What docs/acl.md adds on a Redis Cluster. */
const CLUSTER_COMMANDS =
  '+spublish +ssubscribe +sunsubscribe +command|info +cluster|slots +cluster|info +client|setname';

/** What Redis refused since its ACL LOG was reset, as `reason object (context) by user`. */
async function refusals(redis: Redis): Promise<string[]> {
  const entries = (await redis.call('ACL', 'LOG')) as string[][];
  return entries.map((entry) => {
    const field = (name: string) => entry[entry.indexOf(name) + 1];
    return `${field('reason')} ${field('object')} (${field('context')}) by ${field('username')}`;
  });
}

/** What docs/acl.md adds for `writeFenced` on the resources under one data prefix. */
const fencedRules = (dataPrefix: string) =>
  `~${dataPrefix}* ~{${dataPrefix}*}:fenced ~{*}:fenced:${dataPrefix}*`;

/**
 * Every lock feature, run by apps whose Redis user may only touch keys and channels under its
 * own lock prefix (`~P* ~{P*`, `&P* &{P*`) and run the commands above. Redis refuses anything
 * else (NOPERM) and writes it in its ACL LOG, which must stay empty.
 */
describe('under a Redis ACL user confined to its lock prefix', () => {
  let server: RedisServer;
  let admin: Redis;
  const apps: LockApp[] = [];

  const boot = async (user: 'billing' | 'shipping' | 'ledger', options: LockModuleOptions = {}) => {
    const app = await bootLockApp({
      redis: `redis://${user}:pw@127.0.0.1:${server.port}`,
      keyPrefix: `${user}:lock:`,
      ...options,
    });
    apps.push(app);
    return app;
  };
  const keys = async () => (await admin.keys('*')).sort();

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = rawClient(server.url);
    const rules = (user: string) => aclRules(`${user}:lock:`).split(' ');
    await admin.call('ACL', 'SETUSER', 'ledger', 'reset', 'on', '>pw', ...rules('ledger'));
    await admin.call('ACL', 'SETUSER', 'ledger', ...fencedRules('ledger:data:').split(' '));
    for (const user of ['billing', 'shipping']) {
      await admin.call('ACL', 'SETUSER', user, 'reset', 'on', '>pw', ...rules(user));
    }
  });

  beforeEach(async () => {
    await admin.call('ACL', 'LOG', 'RESET');
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    expect(await refusals(admin)).toEqual([]);
    await admin.flushall();
  });

  afterAll(async () => {
    await admin.quit();
    await server.stop();
  });

  it('documents the same ACL line as this test grants', () => {
    const doc = readFileSync(new URL('../../docs/acl.md', import.meta.url), 'utf8');
    expect(doc).toContain(aclRules('billing:lock:'));
    expect(doc).toContain(fencedRules('billing:data:'));
    expect(doc).toContain(CLUSTER_COMMANDS);
  });

  it.each([
    ['in turn (fair)', true],
    ['by announcing releases', false],
  ])('takes and releases a lock, and wakes its waiters %s', async (_, fair) => {
    const [first, second] = [await boot('billing', { fair }), await boot('billing', { fair })];
    for (const name of ['order:1', '{user:1}:cart']) {
      const held = await first.locks.acquire(name);
      expect(held.key).toBe(`billing:lock:${name}`);
      expect(await first.locks.isLocked(name)).toBe(true);
      const waiting = second.locks.acquire(name, { waitTimeout: 10_000 });
      await sleep(100);
      expect(await held.release()).toBe(true);
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await next.release()).toBe(true);
      expect(await first.locks.isLocked(name)).toBe(false);
    }
  });

  it('renews a lock with the watchdog past its ttl', async () => {
    const app = await boot('billing');
    const lock = await app.locks.acquire('long', { ttl: 1_000 });
    await sleep(2_500);
    expect(lock.signal.aborted).toBe(false);
    expect(holderIn(await admin.get(lock.key))).toBe(lock.token);
    expect(await lock.extend(1_000)).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it('runs semaphores and read-write locks, with waiters', async () => {
    const [first, second] = [await boot('billing'), await boot('billing')];
    const permits = [
      await first.locks.acquire('api', { limit: 2 }),
      await second.locks.acquire('api', { limit: 2 }),
    ];
    const third = second.locks.acquire('api', { limit: 2, waitTimeout: 10_000 });
    await sleep(100);
    await permits[0].release();
    await (await third).release();
    await permits[1].release();

    const readers = [
      await first.locks.acquire('doc', { mode: 'read' }),
      await second.locks.acquire('doc', { mode: 'read' }),
    ];
    const writer = first.locks.acquire('doc', { waitTimeout: 10_000 });
    await sleep(100);
    await Promise.all(readers.map((reader) => reader.release()));
    const written = await writer;
    expect(written.fencingToken).toBeGreaterThan(readers[1].fencingToken);
    await written.release();
  });

  it('hands a mutex, a semaphore permit and a read share to another instance', async () => {
    const [first, second] = [await boot('billing'), await boot('billing')];
    for (const kind of [{}, { limit: 2 }, { mode: 'read' as const }]) {
      const lock = await first.locks.acquire('handed', kind);
      const adopted = await second.locks.adopt(await lock.handOff());
      expect(adopted.fencingToken).toBe(lock.fencingToken);
      expect(await adopted.release()).toBe(true);
    }
  });

  it('holds a leader election, hands it over on resign, and names the leader', async () => {
    @Injectable()
    class Relay {
      readonly epochs: number[] = [];
      @Leader('relay', { ttl: 300 })
      relay({ epoch }: Leadership) {
        this.epochs.push(epoch);
      }
    }
    const modules = await Promise.all(
      ['a', 'b'].map(async (name) => {
        const module = await Test.createTestingModule({
          imports: [
            LockModule.forRoot({
              redis: `redis://billing:pw@127.0.0.1:${server.port}`,
              keyPrefix: 'billing:lock:',
              instanceId: name,
              shutdownGrace: 0,
            }),
          ],
          providers: [Relay],
        }).compile();
        await module.init();
        return module;
      }),
    );
    try {
      const [a, b] = modules.map((module) => module.get(LeaderService));
      await until(async () => a.isLeader('relay') || b.isLeader('relay'), 10_000);
      const [leader, standby] = a.isLeader('relay') ? [a, b] : [b, a];
      const first = (await standby.leader('relay'))?.epoch ?? 0;
      await sleep(1_000); // renewed past 3 ttls
      await leader.resign('relay');
      await until(async () => standby.isLeader('relay'), 10_000);
      const next = await leader.leader('relay');
      expect(next?.owner).toBe(standby === a ? 'a' : 'b');
      expect(next?.epoch).toBeGreaterThan(first);
    } finally {
      await Promise.all(modules.map((module) => module.close()));
    }
  });

  it('throttles with holdFor', async () => {
    const [first, second] = [await boot('billing'), await boot('billing')];
    await first.locks.using('submit', () => 'done', { holdFor: 2_000 });
    const early = await second.locks
      .using('submit', () => 'ran', { holdFor: 2_000, waitTimeout: 0 })
      .catch((error: unknown) => error);
    expect(early).toBeInstanceOf(LockNotAcquiredError);
    expect((early as LockNotAcquiredError).throttled).toBe(true);
  });

  it('writes fenced resources with the patterns added for their data prefix', async () => {
    const app = await boot('ledger');
    for (const resource of ['ledger:data:acct:1', 'ledger:data:{acct:2}:balance']) {
      const lock = await app.locks.acquire(resource);
      await app.locks.writeFenced(resource, 'balance=90', lock.fencingToken);
      await lock.release();
      expect(await admin.get(resource)).toBe('balance=90');
    }
  });

  it('keeps every key and channel of two apps under their own prefixes, sharing none', async () => {
    const [billing, shipping] = [await boot('billing'), await boot('shipping')];
    const [billingWaiter, shippingWaiter] = [await boot('billing'), await boot('shipping')];
    const held = await Promise.all([billing, shipping].map((app) => app.locks.acquire('order:1')));
    const readers = await Promise.all(
      [billing, shipping].map((app) => app.locks.acquire('{user:1}:doc', { mode: 'read' })),
    );
    const waits = [billingWaiter, shippingWaiter].flatMap((app) => [
      app.locks.acquire('order:1', { waitTimeout: 10_000 }),
      app.locks.acquire('{user:1}:doc', { waitTimeout: 10_000 }),
    ]);
    const queued = async () => (await keys()).filter((key) => /\}:(queue|line)/.test(key)).length;
    const channels = () => admin.call('PUBSUB', 'CHANNELS') as Promise<string[]>;
    // Each waiting app listens on each key's channel and on its instance's turn channel for it.
    await until(async () => (await queued()) === 4 && (await channels()).length === 8);
    const inUse = [...(await keys()), ...(await channels())];
    const owners = (name: string) =>
      ['billing', 'shipping'].filter((app) =>
        [`${app}:lock:`, `{${app}:lock:`].some((start) => name.startsWith(start)),
      );
    expect(inUse.filter((name) => owners(name).length !== 1)).toEqual([]);
    for (const lock of [...held, ...readers]) await lock.release();
    for (const lock of await Promise.all(waits)) await lock.release();
    // After the releases, one fencing counter per prefix stays.
    expect(await keys()).toEqual(['{billing:lock:}:fence', '{shipping:lock:}:fence']);
  });
});

onlyIn('all', () => {
  describe('under a Redis ACL user confined to its lock prefix, on a Redis Cluster', () => {
    let cluster: RedisClusterHarness;
    let nodes: Redis[];

    beforeAll(async () => {
      cluster = await RedisClusterHarness.start(3);
      nodes = cluster.ports.map((port) => new Redis(port, '127.0.0.1'));
      const rules = `${aclRules('billing:lock:')} ${CLUSTER_COMMANDS}`.split(' ');
      for (const node of nodes) {
        await node.call('ACL', 'SETUSER', 'billing', 'reset', 'on', '>pw', ...rules);
        await node.call('ACL', 'LOG', 'RESET');
      }
    });

    afterAll(async () => {
      await Promise.all(nodes.map((node) => node.quit()));
      await cluster.stop();
    });

    it('takes, renews, hands over and releases locks of every kind on every master', async () => {
      const boot = () =>
        bootLockApp({
          redis: {
            cluster: cluster.nodes,
            clusterOptions: { redisOptions: { username: 'billing', password: 'pw' } },
          },
          keyPrefix: 'billing:lock:',
        });
      const [first, second] = [await boot(), await boot()];
      try {
        const names = [...Array.from({ length: 6 }, (_, i) => `order:${i}`), '{user:1}:cart'];
        // Held past twice their ttl, renewed meanwhile: a ttl a loaded machine can keep.
        const held = await Promise.all(
          names.map((name) => first.locks.acquire(name, { ttl: 1_000 })),
        );
        const owners = await Promise.all(held.map((lock) => cluster.portForKey(lock.key)));
        expect(new Set(owners).size).toBe(3);
        const waits = names.map((name) => second.locks.acquire(name, { waitTimeout: 10_000 }));
        await sleep(2_500);
        expect(held.some((lock) => lock.signal.aborted)).toBe(false);
        for (const lock of held) await lock.release();
        for (const lock of await Promise.all(waits)) await lock.release();
        const permits = await Promise.all(
          [first, second].map((app) => app.locks.acquire('{user:1}:api', { limit: 2 })),
        );
        for (const permit of permits) await permit.release();
        const reader = await first.locks.acquire('doc', { mode: 'read' });
        const writer = second.locks.acquire('doc', { waitTimeout: 10_000 });
        await sleep(100);
        await reader.release();
        await (await writer).release();
      } finally {
        await Promise.all([first.close(), second.close()]);
      }
      const refused = (await Promise.all(nodes.map(refusals))).flat();
      expect(refused).toEqual([]);
      const left = (await Promise.all(nodes.map((node) => node.keys('*')))).flat();
      expect(left.filter((key) => !/^\{billing:lock:[0-9a-zA-Z]{3}\}:fence$/.test(key))).toEqual(
        [],
      );
    }, 60_000);
  });
});
