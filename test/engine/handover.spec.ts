import { once } from 'node:events';
import type { Redis } from 'ioredis';
import type { LockEngine } from '../../src/engine/lock-engine.js';
import type { Lock } from '../../src/index.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import { bootLockApp, rawClient, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startWaitingProcess } from '../support/waiting-child.js';
import { holderIn } from '../support/lock-value.js';
import { markOfToken } from '../../src/engine/token.js';
import { turnChannelOf } from '../../src/store/redis/redis-keys.js';

/**
 * The fair handover, attacked: a waiter whose pub/sub connection lags its command connection,
 * a waiter that dies while queued, and waiters whose TTL is shorter than their wait. Each
 * holder must hold the lock in Redis from the moment its `acquire()` resolves.
 */
describe('the fair handover', () => {
  let server: RedisServer;
  let redis: Redis;
  const apps: LockApp[] = [];
  const boot = async (url: string) => {
    const app = await bootLockApp({ redis: url });
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
    await server.stop();
  });

  const until = async (condition: () => Promise<boolean>) => {
    while (!(await condition())) await sleep(10);
  };

  it('makes no second holder when the handover notice arrives after the lock changed hands', async () => {
    const proxy = await TcpProxy.start(server.port);
    try {
      const holder = await boot(server.url);
      const other = await boot(server.url);
      // The waiter's command connection is the first through the proxy, its subscriber the second.
      const waiter = await boot(proxy.url);
      const held = await holder.locks.acquire('late', { ttl: 10_000 });
      let waiterLock: Lock | undefined;
      let ownerWhenAcquired: string | null = null;
      const waited = waiter.locks
        .acquire('late', { ttl: 3_000, waitTimeout: 30_000 })
        .then(async (lock) => {
          waiterLock = lock;
          ownerWhenAcquired = holderIn(await redis.get(lock.key));
          return lock;
        });
      await until(async () => (await redis.pubsub('NUMSUB', held.key))[1] === 1);
      // Let the waiter's fallback re-check back off to about once a second.
      await sleep(2_500);
      // The handover notice reaches the waiter 4.5 s late; its re-checks are held back until
      // the handed-over lock has expired and another process took it.
      proxy.delay(4_500, (connection) => connection >= 2);
      proxy.stall((connection) => connection === 1);
      const releasedAt = performance.now();
      await held.release();
      let taken: Lock | null = null;
      while (!taken) {
        taken = await other.locks.tryAcquire('late', { ttl: 10_000 });
        if (!taken) await sleep(10);
      }
      proxy.resume();
      // Past the moment the late notice arrived, with the other holder still inside.
      await sleep(Math.max(0, releasedAt + 5_500 - performance.now()));
      expect(waiterLock).toBeUndefined();
      expect(taken.signal.aborted).toBe(false);
      expect(holderIn(await redis.get(taken.key))).toBe(taken.token);
      proxy.delay(0);
      const takenReleased = await taken.release();
      const lock = await waited;
      expect(takenReleased).toBe(true);
      expect(ownerWhenAcquired).toBe(lock.token);
      expect(lock.signal.aborted).toBe(false);
      expect(lock.fencingToken).toBeGreaterThan(taken.fencingToken);
      await lock.release();
    } finally {
      proxy.resume();
      await proxy.stop();
    }
  }, 60_000);

  describe('the queue mark in the lock value', () => {
    const queueOf = (key: string) => `{${key}}:queue`;

    it('is set when a waiter queues and not otherwise, and the release hands the lock over', async () => {
      const prefix = uniquePrefix();
      const [holder, waiter] = [
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
      ];
      apps.push(holder, waiter);
      const held = await holder.locks.acquire('marked', { ttl: 10_000 });
      expect(await redis.get(held.key)).toBe(`${held.token} ${held.fencingToken}`);
      const waited = waiter.locks.acquire('marked', { ttl: 10_000, waitTimeout: 20_000 });
      await until(async () => (await redis.zcard(queueOf(held.key))) === 1);
      expect(await redis.get(held.key)).toBe(`${held.token} ${held.fencingToken} +`);
      expect(await redis.pttl(held.key)).toBeGreaterThan(5_000);
      await held.release();
      const lock = await waited;
      // Granted to the last waiter: nobody is left in the queue, so its value has no mark.
      expect(await redis.get(lock.key)).toBe(`${lock.token} ${lock.fencingToken}`);
      expect(await redis.exists(queueOf(lock.key))).toBe(0);
      await lock.release();
      expect(await redis.exists(lock.key)).toBe(0);
    });

    it('costs the head of the queue a re-check when lost, never its place', async () => {
      const prefix = uniquePrefix();
      const proxy = await TcpProxy.start(server.port);
      try {
        // The waiter's command connection is the first through the proxy.
        const waiter = await bootLockApp({ redis: proxy.url, keyPrefix: prefix });
        const holder = await bootLockApp({ redis: server.url, keyPrefix: prefix });
        const newcomer = await bootLockApp({ redis: server.url, keyPrefix: prefix });
        apps.push(holder, waiter, newcomer);
        const held = await holder.locks.acquire('unmarked', { ttl: 10_000 });
        const waited = waiter.locks.acquire('unmarked', { ttl: 10_000, waitTimeout: 20_000 });
        await until(async () => (await redis.zcard(queueOf(held.key))) === 1);
        // The waiter's attempts wait meanwhile, so that none of its re-checks puts the mark
        // back between its loss and the release.
        proxy.stall((connection) => connection === 1);
        await redis.set(held.key, `${held.token} ${held.fencingToken}`, 'KEEPTTL');
        await held.release();
        // The release did not look at the queue: the lock is gone and the waiter still queued.
        expect(await redis.exists(held.key)).toBe(0);
        expect(await redis.zrange(queueOf(held.key), 0, -1)).toHaveLength(1);
        // A caller that comes now finds the queue and does not pass its head.
        expect(await newcomer.locks.tryAcquire('unmarked')).toBeNull();
        proxy.resume();
        const lock = await waited;
        expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
        expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
        await lock.release();
      } finally {
        proxy.resume();
        await proxy.stop();
      }
    });

    it('leaves an uncontended acquire and release six commands in Redis', async () => {
      const app = await bootLockApp({ redis: server.url, keyPrefix: uniquePrefix() });
      apps.push(app);
      await (await app.locks.acquire('counted')).release();
      await redis.config('RESETSTAT');
      const pairs = 20;
      for (let i = 0; i < pairs; i++) await (await app.locks.acquire('counted')).release();
      const calls: Record<string, number> = {};
      for (const [, command, count] of (await redis.info('commandstats')).matchAll(
        /^cmdstat_(\S+?):calls=(\d+),/gm,
      )) {
        // A script goes by its SHA once the connection sent it whole.
        const name = command === 'eval' ? 'evalsha' : command;
        if (name !== 'config|resetstat') calls[name] = (calls[name] ?? 0) + Number(count);
      }
      // EXISTS lock + queue, TIME, SET … GET of the counter, SET of the value; GET, DEL.
      expect(calls).toEqual({
        evalsha: 2 * pairs,
        exists: pairs,
        time: pairs,
        set: 2 * pairs,
        get: pairs,
        del: pairs,
      });
    });
  });

  describe('the grant carried by the release notice', () => {
    const queueOf = (key: string) => `{${key}}:queue`;

    it('makes the waiter of another process a holder from the notice, and renews the lock to its TTL', async () => {
      const prefix = uniquePrefix();
      const [holder, waiter] = [
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
      ];
      apps.push(holder, waiter);
      const waiting = waiter.module.get<LockEngine>(LOCK_ENGINE).waiters;
      const listener = rawClient(server.url);
      // The notice grants the lock to the waiter from its last refused attempt. An attempt of
      // its own on its way when the notice comes (its fallback re-check, 50 ms after it queued,
      // then later and later) decides instead, and takes the lock with a later token: both are
      // right. So the handover is tried a few times; every one must be sound, and on any
      // machine the notice serves most of them.
      let fromNotice: Lock | undefined;
      try {
        for (let round = 0; round < 5 && !fromNotice; round++) {
          const name = `noticed:${round}`;
          const held = await holder.locks.acquire(name, { ttl: 10_000 });
          const waited = waiter.locks.acquire(name, { ttl: 10_000, waitTimeout: 20_000 });
          // The waiter has its refusal in hand, not only a place in the store's line.
          await until(async () => waiting.has(held.key));
          const [waiterToken] = await redis.zrange(queueOf(held.key), 0, -1);
          // The notice goes to the turn channel of the instance the waiter's token names.
          const turns = turnChannelOf(held.key, markOfToken(waiterToken)!);
          const notices: string[] = [];
          await listener.subscribe(turns);
          listener.removeAllListeners('message');
          listener.on('message', (channel: string, message: string) => {
            if (channel === turns) notices.push(message);
          });
          await held.release();
          const lock = await waited;
          await until(async () => notices.length === 1);
          const [noticed] = notices;
          expect(noticed).toMatch(new RegExp(`^turn:${waiterToken} \\d+$`));
          const noticeToken = Number(noticed.split(' ')[1]);
          expect(lock.token).toBe(waiterToken);
          expect(lock.fencingToken).toBeGreaterThanOrEqual(noticeToken);
          if (lock.fencingToken === noticeToken) fromNotice = lock;
          else expect(await lock.release()).toBe(true);
        }
        expect(fromNotice).toBeDefined();
        const lock = fromNotice!;
        // Granted for the handover lease (500 ms); its watchdog renews it to the whole TTL.
        await sleep(800);
        expect(lock.signal.aborted).toBe(false);
        expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
        expect(await redis.pttl(lock.key)).toBeGreaterThan(8_000);
        expect(await lock.release()).toBe(true);
      } finally {
        listener.disconnect();
      }
    });

    it('holds nobody on a notice of a grant from before the waiter was refused', async () => {
      const prefix = uniquePrefix();
      const [holder, waiter] = [
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
        await bootLockApp({ redis: server.url, keyPrefix: prefix }),
      ];
      apps.push(holder, waiter);
      const held = await holder.locks.acquire('stale', { ttl: 10_000 });
      let waiterLock: Lock | undefined;
      const waited = waiter.locks
        .acquire('stale', { ttl: 10_000, waitTimeout: 20_000 })
        .then((lock) => (waiterLock = lock));
      await until(async () => (await redis.zcard(queueOf(held.key))) === 1);
      const [waiterToken] = await redis.zrange(queueOf(held.key), 0, -1);
      // The holder's grant, as a late notice would tell it to the waiter: it came before the
      // waiter's refusal, which saw the holder there.
      await redis.publish(held.key, `turn:${waiterToken} ${held.fencingToken}`);
      await sleep(300);
      expect(waiterLock).toBeUndefined();
      expect(holderIn(await redis.get(held.key))).toBe(held.token);
      await held.release();
      const lock = await waited;
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await lock.release();
    });
  });

  it('costs the others about a queue lease, not a TTL, when a queued waiter dies', async () => {
    const prefix = uniquePrefix();
    const holder = await bootLockApp({ redis: server.url, keyPrefix: prefix });
    const next = await bootLockApp({ redis: server.url, keyPrefix: prefix });
    apps.push(holder, next);
    const held = await holder.locks.acquire('dead', { ttl: 10_000 });
    const child = startWaitingProcess(server.url, prefix, 'dead', { ttl: 60_000 });
    try {
      await until(async () => (await redis.zcard(`{${held.key}}:queue`)) === 1);
      const queued = next.locks.acquire('dead', { waitTimeout: 20_000 });
      await until(async () => (await redis.zcard(`{${held.key}}:queue`)) === 2);
      // Killed while queued, first in line, with its queue lease still running.
      child.kill('SIGKILL');
      await once(child, 'exit');
      await held.release();
      // The dead waiter asked for a 60 s TTL and the live one waits at most 20 s: it only gets
      // the lock if the dead one's turn costs far less than its TTL.
      const lock = await queued;
      expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await lock.release();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('hands a waiter whose TTL is shorter than its wait a lock it still holds', async () => {
    const holder = await boot(server.url);
    const waiter = await boot(server.url);
    const keys = ['short:1', 'short:2', 'short:3'];
    const held = await Promise.all(keys.map((key) => holder.locks.acquire(key, { ttl: 10_000 })));
    // A TTL far shorter than the wait, yet one a loaded machine can renew: a 50 ms one is lost
    // to any event-loop stall of 40 ms, which is no fault of the handover's.
    const waits = keys.map((key) =>
      waiter.locks.acquire(key, { ttl: 400, waitTimeout: 20_000 }).then(async (lock) => ({
        lock,
        owner: holderIn(await redis.get(lock.key)),
      })),
    );
    // Waits six times the waiters' TTL, with re-checks about a second apart.
    await sleep(2_500);
    await Promise.all(held.map((lock) => lock.release()));
    const acquired = await Promise.all(waits);
    // Held, and kept alive by the watchdog for three TTLs.
    await sleep(1_200);
    for (const { lock, owner } of acquired) {
      expect(owner).toBe(lock.token);
      expect(lock.signal.aborted).toBe(false);
      expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    }
    await Promise.all(acquired.map(({ lock }) => lock.release()));
  }, 60_000);
});
