import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import { LockNotAcquiredError, type Lock, type LockModuleOptions } from '../../src/index.js';
import { processSpace } from '../../src/store/memory/memory-space.js';
import {
  aborted,
  bootLockApp,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { OtelSdk } from '../support/otel.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';
import { byTier } from '../support/tiers.js';

/** A backend as this spec drives it: how to boot on it, and how to take a lock from behind. */
interface Target {
  backend: 'redis' | 'memory' | 'zookeeper';
  throttle: boolean;
  setUp(): Promise<LockModuleOptions>;
  /** Deletes the lock `key` (as named, without the prefix) behind its holder's back. */
  steal(key: string): Promise<void>;
  tearDown(): Promise<void>;
}

function redisTarget(): Target {
  const keyPrefix = uniquePrefix();
  let redis: Redis;
  return {
    backend: 'redis',
    throttle: true,
    setUp: async () => {
      redis = new Redis(sharedRedisUrl());
      return { redis: sharedRedisUrl(), keyPrefix };
    },
    steal: async (key) => void (await redis.del(keyPrefix + key)),
    tearDown: async () => void (await redis.quit()),
  };
}

function memoryTarget(): Target {
  const keyPrefix = uniquePrefix();
  return {
    backend: 'memory',
    throttle: true,
    setUp: async () => ({ store: 'memory', keyPrefix }),
    steal: async (key) => void processSpace.locks.delete(keyPrefix + key),
    tearDown: async () => undefined,
  };
}

function zookeeperTarget(): Target {
  const root = `/telemetry-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let tree: ZooKeeperTree;
  /** Lock nodes emptied from behind, which no release of the library deletes. */
  const emptied: string[] = [];
  return {
    backend: 'zookeeper',
    throttle: false,
    setUp: async () => {
      server = await ZooKeeperServer.start();
      tree = await ZooKeeperTree.connect(server.address);
      return { zookeeper: { connectionString: server.address, sessionTimeout: 6_000, root } };
    },
    steal: async (key) => {
      const node = `${root}/lock:${key}`;
      for (const child of await tree.children(node)) await tree.remove(`${node}/${child}`);
      emptied.push(node);
    },
    tearDown: async () => {
      for (const node of emptied) await tree.remove(node);
      expect(await tree.below(root)).toEqual([]);
      tree.close();
      await server.stop();
    },
  };
}

describe.each<[string, () => Target]>(
  byTier({
    quick: [
      ['Redis', redisTarget],
      ['the memory store', memoryTarget],
    ],
    all: [['ZooKeeper', zookeeperTarget]],
  }),
)('Lock metrics and spans on %s', (_, makeTarget) => {
  const target = makeTarget();
  const { backend } = target;
  let sdk: OtelSdk;
  let holder: LockApp;
  let other: LockApp;

  beforeAll(async () => {
    // As an app does: the SDK first, then the module, which takes the providers as it boots.
    sdk = OtelSdk.start();
    const options = await target.setUp();
    holder = await bootLockApp(options);
    other = await bootLockApp(options);
  });

  afterAll(async () => {
    await holder?.close();
    await other?.close();
    await target.tearDown();
    await sdk.stop();
  });

  const of = (name: string, extra: Record<string, string> = {}) => ({
    'lock.name': name,
    'lock.kind': 'mutex',
    'lock.backend': backend,
    ...extra,
  });
  const outcomes = (name: string, outcome: string) =>
    sdk.total('lock.acquire.duration', of(name, { 'lock.outcome': outcome }));

  it('records an acquisition and its hold, each in seconds, and counts the lock while held', async () => {
    const lock = await holder.locks.acquire('acquired:1');
    expect(await sdk.total('lock.held', of('acquired:*'))).toBe(1);
    await sleep(50);
    expect(await lock.release()).toBe(true);

    const collected = await sdk.collect();
    expect(collected.get('lock.acquire.duration')).toMatchObject({
      unit: 's',
      type: DataPointType.HISTOGRAM,
    });
    expect(collected.get('lock.hold.duration')).toMatchObject({
      unit: 's',
      type: DataPointType.HISTOGRAM,
    });
    expect(collected.get('lock.held')?.unit).toBe('{lock}');
    expect(await sdk.values('lock.acquire.duration', of('acquired:*'))).toEqual([
      { attributes: of('acquired:*', { 'lock.outcome': 'acquired' }), value: 1 },
    ]);
    const [hold] = (await sdk.collect())
      .get('lock.hold.duration')!
      .points.filter((p) => p.attributes['lock.name'] === 'acquired:*');
    expect(hold.attributes).toEqual(of('acquired:*', { 'lock.end': 'released' }));
    expect(hold.value).toMatchObject({ count: 1 });
    // Seconds, not milliseconds: the lock was held for about 50 ms.
    expect((hold.value as { sum: number }).sum).toBeGreaterThan(0.04);
    expect((hold.value as { sum: number }).sum).toBeLessThan(30);
    expect(await sdk.total('lock.held', of('acquired:*'))).toBe(0);

    const [span] = sdk.finished('lock.acquire', 'acquired:*');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.attributes).toEqual({
      ...of('acquired:*'),
      'lock.outcome': 'acquired',
      'lock.fencing_token': lock.fencingToken,
    });
    const [release] = sdk.finished('lock.release', 'acquired:*');
    expect(release.attributes).toMatchObject({ 'lock.outcome': 'released' });
  });

  it('says busy when a caller that does not wait finds the lock held', async () => {
    const lock = await holder.locks.acquire('busy:1');
    try {
      expect(await other.locks.tryAcquire('busy:1')).toBeNull();
      await expect(other.locks.acquire('busy:1', { waitTimeout: 0 })).rejects.toThrow(
        LockNotAcquiredError,
      );
      expect(await outcomes('busy:*', 'busy')).toBe(2);
      expect(
        sdk.finished('lock.acquire', 'busy:*').map((s) => s.attributes['lock.outcome']),
      ).toEqual(['acquired', 'busy', 'busy']);
    } finally {
      await lock.release();
    }
  });

  it('counts a waiting caller while it waits, and says timeout when its wait runs out', async () => {
    const lock = await holder.locks.acquire('timeout:1');
    try {
      const waiting = other.locks.acquire('timeout:1', { waitTimeout: 400 });
      const refused = expect(waiting).rejects.toThrow(LockNotAcquiredError);
      await sleep(100);
      expect(await sdk.total('lock.waiting', of('timeout:*'))).toBe(1);
      await refused;
      expect(await sdk.total('lock.waiting', of('timeout:*'))).toBe(0);
      expect(await outcomes('timeout:*', 'timeout')).toBe(1);
    } finally {
      await lock.release();
    }
  });

  it('says aborted when the caller’s signal abandons the wait', async () => {
    const lock = await holder.locks.acquire('aborted:1');
    try {
      const controller = new AbortController();
      const waiting = other.locks.acquire('aborted:1', {
        waitTimeout: 10_000,
        signal: controller.signal,
      });
      await sleep(50);
      controller.abort(new Error('the client went away'));
      await expect(waiting).rejects.toThrow('the client went away');
      expect(await outcomes('aborted:*', 'aborted')).toBe(1);
      expect(await sdk.total('lock.waiting', of('aborted:*'))).toBe(0);
    } finally {
      await lock.release();
    }
  });

  it('counts a lost lock, and ends its hold as lost', async () => {
    const lock: Lock = await holder.locks.acquire('lost:1', { ttl: 300 });
    const lost = aborted(lock);
    await target.steal('lost:1');
    await lost;
    expect(await sdk.total('lock.lost', of('lost:*'))).toBe(1);
    expect(await sdk.total('lock.hold.duration', of('lost:*', { 'lock.end': 'lost' }))).toBe(1);
    expect(await sdk.total('lock.hold.duration', of('lost:*', { 'lock.end': 'released' }))).toBe(0);
    expect(await sdk.total('lock.held', of('lost:*'))).toBe(0);
    // Releasing it afterwards changes nothing: a hold ends once.
    expect(await lock.release()).toBe(false);
    expect(await sdk.total('lock.hold.duration', of('lost:*'))).toBe(1);
    expect((await sdk.collect()).get('lock.lost')?.type).toBe(DataPointType.SUM);
  });

  it('names the kind of every lock', async () => {
    const kinds = [
      ['semaphore', { limit: 2 }],
      ['read', { mode: 'read' }],
      ['write', { mode: 'write' }],
    ] as const;
    for (const [kind, options] of kinds) {
      const lock = await holder.locks.acquire(`kinds-${kind}:1`, options);
      await lock.release();
      expect(
        await sdk.total('lock.acquire.duration', {
          ...of(`kinds-${kind}:*`, { 'lock.outcome': 'acquired' }),
          'lock.kind': kind,
        }),
      ).toBe(1);
    }
  });

  // ZooKeeper refuses holdFor (a lock lives as long as its holder's session).
  if (!target.throttle) return;

  it('says throttled when a holdFor window is still open', async () => {
    const first = await holder.locks.acquire('throttled:1', { holdFor: 5_000 });
    await first.release();
    expect(await other.locks.tryAcquire('throttled:1', { holdFor: 5_000 })).toBeNull();
    await expect(
      other.locks.acquire('throttled:1', { holdFor: 5_000, waitTimeout: 0 }),
    ).rejects.toMatchObject({ throttled: true });
    expect(await outcomes('throttled:*', 'throttled')).toBe(2);
    expect(await outcomes('throttled:*', 'acquired')).toBe(1);
    // Released into its window, the throttle counts as released, not lost.
    expect(
      await sdk.total('lock.hold.duration', of('throttled:*', { 'lock.end': 'released' })),
    ).toBe(1);
  });

  it('says throttled or busy as the holder is a throttle or not, whatever the caller’s holdFor', async () => {
    const throttle = await holder.locks.acquire('decided-throttle:1', { holdFor: 5_000 });
    await throttle.release();
    expect(await other.locks.tryAcquire('decided-throttle:1')).toBeNull();
    await expect(
      other.locks.acquire('decided-throttle:1', { waitTimeout: 0 }),
    ).rejects.toMatchObject({
      throttled: true,
    });
    const plain = await holder.locks.acquire('decided-plain:1');
    expect(await other.locks.tryAcquire('decided-plain:1', { holdFor: 5_000 })).toBeNull();
    await expect(
      other.locks.acquire('decided-plain:1', { holdFor: 5_000, waitTimeout: 0 }),
    ).rejects.toMatchObject({ throttled: false });
    await plain.release();
    expect(await outcomes('decided-throttle:*', 'throttled')).toBe(2);
    expect(await outcomes('decided-throttle:*', 'busy')).toBe(0);
    expect(await outcomes('decided-plain:*', 'busy')).toBe(2);
    expect(await outcomes('decided-plain:*', 'throttled')).toBe(0);
  });
});
