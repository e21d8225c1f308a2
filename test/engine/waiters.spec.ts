import { RedisServer } from '../support/redis-server.js';
import { LockConnectionError, LockNotAcquiredError } from '../../src/index.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import type { LockStore } from '../../src/store/lock-store.interface.js';
import {
  bootLockApp,
  commandCalls,
  rawClient,
  scriptCalls,
  sleep,
  type LockApp,
} from '../support/lock-app.js';
import type { Redis } from 'ioredis';
import { TcpProxy } from '../support/tcp-proxy.js';
import { holderIn } from '../support/lock-value.js';
import { until } from '../support/backends.js';

describe.each([true, false])('waiting for a held lock (fair: %s)', (fair) => {
  let server: RedisServer;
  let holder: LockApp;
  let waiter: LockApp;
  let monitor: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    holder = await bootLockApp({ redis: server.url, fair });
    waiter = await bootLockApp({ redis: server.url, fair });
    monitor = rawClient(server.url);
  });

  afterAll(async () => {
    await Promise.all([holder.close(), waiter.close()]);
    await monitor.quit();
    await server.stop();
  });

  const attempts = () => scriptCalls(monitor);

  it('is woken by the release notification, not by polling', async () => {
    const held = await holder.locks.acquire('job', { ttl: 60_000 });
    const waited = waiter.locks.acquire('job', { waitTimeout: 30_000 });
    await sleep(2_500);
    // Over 2.5 s the fallback re-check, backing off to once a second, made a handful of
    // attempts; a client polling every 50 ms would have made about 50.
    const beforeRelease = await attempts();
    await held.release();
    const lock = await waited;
    const afterAcquire = await attempts();
    expect(afterAcquire - beforeRelease).toBeLessThanOrEqual(3);
    await lock.release();
  });

  /** An app whose store fails its subscriptions with `failure` until `failures` ran out. */
  const failingSubscriptions = async (failure: () => Error, failures = Infinity) => {
    const app = await bootLockApp({ redis: server.url, fair });
    const store = app.module.get<{ store: LockStore }>(LOCK_ENGINE).store;
    const subscribe = store.subscribe.bind(store);
    const failed = { count: 0 };
    store.subscribe = (key, onEvent) => {
      if (failed.count === failures) return subscribe(key, onEvent);
      failed.count++;
      return Promise.reject(failure());
    };
    return { app, failed };
  };
  const socketClosed = () =>
    new LockConnectionError('cut', 'subscribe failed: Socket closed unexpectedly', {
      cause: new Error('Socket closed unexpectedly'),
    });

  it('keeps waiting through subscriptions that fail (a failover), and is woken once one is made', async () => {
    const { app, failed } = await failingSubscriptions(socketClosed, 2);
    try {
      const held = await holder.locks.acquire('resubscribe', { ttl: 60_000 });
      const waited = app.locks.acquire('resubscribe', { waitTimeout: 30_000 });
      for (let tries = 0; failed.count < 2 && tries < 200; tries++) await sleep(10);
      await sleep(500);
      await held.release();
      await (await waited).release();
      expect(failed.count).toBe(2);
    } finally {
      await app.close();
    }
  });

  it('gets the lock by the fallback re-check while no subscription can be made', async () => {
    const { app, failed } = await failingSubscriptions(socketClosed);
    try {
      const held = await holder.locks.acquire('deaf', { ttl: 60_000 });
      const waited = app.locks.acquire('deaf', { waitTimeout: 30_000 });
      await sleep(300);
      await held.release();
      await (await waited).release();
      expect(failed.count).toBeGreaterThan(1);
    } finally {
      await app.close();
    }
  });

  it('fails the waiter at once when the server refuses the subscription', async () => {
    const refused = () =>
      new LockConnectionError('acl', 'subscribe failed: NOPERM no permissions to the channel', {
        cause: new Error('NOPERM no permissions to access the channel'),
      });
    const { app } = await failingSubscriptions(refused);
    try {
      const held = await holder.locks.acquire('refused', { ttl: 60_000 });
      await expect(app.locks.acquire('refused', { waitTimeout: 600_000 })).rejects.toThrow(
        'NOPERM',
      );
      await held.release();
    } finally {
      await app.close();
    }
  });

  it('subscribes again after its connection was cut, and closes cleanly while it does', async () => {
    const proxy = await TcpProxy.start(server.port);
    const app = await bootLockApp({ redis: proxy.url, fair });
    const subscribers = async (key: string) =>
      ((await monitor.pubsub('NUMSUB', key)) as [string, number])[1];
    const pubSubClients = async () =>
      [
        ...((await monitor.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string).matchAll(
          /\bid=(\d+)/g,
        ),
      ].map(([, id]) => id);
    try {
      const held = await holder.locks.acquire('cut-subscriber', { ttl: 60_000 });
      const waited = app.locks.acquire('cut-subscriber', { waitTimeout: 30_000 });
      for (let tries = 0; (await subscribers(held.key)) < 1 && tries < 200; tries++) {
        await sleep(10);
      }
      // The server may count the cut subscriber for a moment still: wait for a new one.
      const before = await pubSubClients();
      proxy.cut();
      const resubscribed = async () =>
        (await pubSubClients()).some((id) => !before.includes(id)) &&
        (await subscribers(held.key)) === 1;
      for (let tries = 0; !(await resubscribed()) && tries < 300; tries++) await sleep(10);
      expect(await resubscribed()).toBe(true);
      await held.release();
      await (await waited).release();
      // Cut again, and close while the new connection's SUBSCRIBE is held on its way.
      const again = await holder.locks.acquire('cut-subscriber', { ttl: 60_000 });
      const waiting = app.locks.acquire('cut-subscriber', { waitTimeout: 30_000 });
      await sleep(100);
      proxy.stall();
      proxy.cut();
      await sleep(300);
      await app.close();
      await expect(waiting).rejects.toThrow();
      await again.release();
    } finally {
      await app.close();
      await proxy.stop();
    }
  });

  it('keeps a subscription for the next wait on the key, then ends it', async () => {
    const subscribes = () => commandCalls(monitor, 'subscribe');
    const waitOnce = async () => {
      const held = await holder.locks.acquire('again', { ttl: 60_000 });
      const waited = waiter.locks.acquire('again', { waitTimeout: 30_000 });
      await sleep(100);
      await held.release();
      await (await waited).release();
      return held.key;
    };
    const before = await subscribes();
    const key = await waitOnce();
    await waitOnce();
    await waitOnce();
    // One SUBSCRIBE per channel for three waits in a row (the key's, and in fair mode the
    // instance's turn channel for it), and they are gone once nobody waited for a while.
    const turns = () => monitor.pubsub('CHANNELS', `{${key}}:turn@*`) as Promise<string[]>;
    expect((await subscribes()) - before).toBe(fair ? 2 : 1);
    expect(await monitor.pubsub('NUMSUB', key)).toEqual([key, 1]);
    expect(await turns()).toHaveLength(fair ? 1 : 0);
    while ((await monitor.pubsub('NUMSUB', key))[1] !== 0) await sleep(100);
    expect(await turns()).toEqual([]);
    expect(await commandCalls(monitor, 'unsubscribe')).toBeGreaterThanOrEqual(fair ? 2 : 1);
  }, 30_000);

  it('subscribes once per process and key, however many callers wait', async () => {
    const held = await holder.locks.acquire('crowd', { ttl: 60_000 });
    const waiting = Array.from({ length: 20 }, () =>
      waiter.locks.using('crowd', () => sleep(1), { waitTimeout: 30_000 }),
    );
    await sleep(200);
    expect(await monitor.pubsub('NUMSUB', held.key)).toEqual([held.key, 1]);
    const before = await attempts();
    await held.release();
    await Promise.all(waiting);
    // 20 handoffs: each costs an acquire and a release, with few wasted attempts, because only
    // the head of the local queue asks Redis.
    expect((await attempts()) - before).toBeLessThanOrEqual(20 * 2 + 10);
  });
});

describe('fair mode across processes', () => {
  let server: RedisServer;
  const apps: LockApp[] = [];
  let redis: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    for (let i = 0; i < 3; i++) apps.push(await bootLockApp({ redis: server.url }));
    redis = rawClient(server.url);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
    await server.stop();
  });

  it('serves the processes in the order they queued, each its own callers in order', async () => {
    const [a, b, c] = apps;
    const order: string[] = [];
    const held = await a.locks.acquire('line', { ttl: 10_000 });
    // Each caller comes once the one before it waits in the store's line: the order of arrival
    // is an awaited fact, not a guess at how long a loaded machine takes to send an attempt.
    const queued: Promise<void>[] = [];
    for (const [i, app] of [b, c, b, c].entries()) {
      const served = app.locks.acquire('line', { waitTimeout: 10_000 }).then(async (lock) => {
        order.push(`waiter ${i}`);
        await sleep(5);
        await lock.release();
      });
      queued.push(served);
      await until(async () => (await a.locks.inspect('line')).waiting > i, 10_000);
    }
    await held.release();
    const again = await a.locks.acquire('line', { waitTimeout: 10_000 });
    order.push('holder again');
    await again.release();
    await Promise.all(queued);
    // All four wait in the store's line, in the order they came, whatever their process; the
    // holder that asked again comes behind them.
    expect(order).toEqual(['waiter 0', 'waiter 1', 'waiter 2', 'waiter 3', 'holder again']);
  });

  it('hands a released lock straight to the queued waiter, with a greater fencing token', async () => {
    const [a, b] = apps;
    const held = await a.locks.acquire('handover', { ttl: 10_000 });
    const waiting = b.locks.acquire('handover', { waitTimeout: 10_000 });
    await sleep(100);
    await held.release();
    const lock = await waiting;
    expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
    expect(await redis.exists('{lock:handover}:queue', '{lock:handover}:waiters')).toBe(0);
  });

  it('skips a queued waiter whose process stopped checking in', async () => {
    const [a, b] = apps;
    const held = await a.locks.acquire('dead', { ttl: 10_000 });
    // A waiter queued first whose lease has already run out, as if its process had died.
    await redis.zadd('{lock:dead}:queue', 1, 'ghost');
    await redis.hset('{lock:dead}:waiters', 'ghost', '1 30000');
    const waiting = b.locks.acquire('dead', { waitTimeout: 10_000 });
    await sleep(100);
    await held.release();
    const lock = await waiting;
    expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    await lock.release();
    expect(await redis.zcard('{lock:dead}:queue')).toBe(0);
  });

  it('a waiter that gives up leaves the queue and does not receive the lock', async () => {
    const [a, b] = apps;
    const held = await a.locks.acquire('quitter', { ttl: 10_000 });
    await expect(b.locks.acquire('quitter', { waitTimeout: 200 })).rejects.toBeInstanceOf(
      LockNotAcquiredError,
    );
    await sleep(50);
    expect(await redis.zcard('{lock:quitter}:queue')).toBe(0);
    await held.release();
    expect(await redis.exists(held.key)).toBe(0);
  });
});
