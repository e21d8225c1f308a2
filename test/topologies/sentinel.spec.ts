import { Redis } from 'ioredis';
import {
  LockHealthIndicator,
  LockLostError,
  LockReplicationError,
  type LockModuleOptions,
} from '../../src/index.js';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { RedisSentinelHarness } from '../support/redis-sentinel.js';
import { aborted, bootLockApp, commandCalls, sleep, type LockApp } from '../support/lock-app.js';
import { holderIn } from '../support/lock-value.js';
import { until } from '../support/backends.js';

/** A matcher, typed as what it stands for in a report. */
const aString: unknown = expect.any(String);

/**
 * One master, one replica and three sentinels. The replica replicates through a proxy, so that
 * a test can stall replication and produce the failure that asynchronous replication allows: a
 * lock the master granted but never passed on before it died.
 */
describe('behind Sentinel', () => {
  let sentinel: RedisSentinelHarness;
  const apps: LockApp[] = [];

  const boot = async (options: LockModuleOptions = {}) => {
    const app = await bootLockApp({
      redis: { sentinels: sentinel.sentinels, name: sentinel.name },
      commandTimeout: 1_000,
      ...options,
    });
    apps.push(app);
    return app;
  };
  /** Runs `look` on a plain connection to the server on `port`. */
  const onServer = async <T>(port: number, look: (server: Redis) => Promise<T>): Promise<T> => {
    const server = new Redis(port, '127.0.0.1', { disconnectTimeout: 50 });
    try {
      return await look(server);
    } finally {
      server.disconnect();
    }
  };

  const start = async () => {
    sentinel = await RedisSentinelHarness.start({ stallableReplication: true });
  };
  const stop = async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await sentinel.stop();
  };

  // node-redis's Sentinel client does not take a master that a sentinel still flags as
  // disconnected, as each does for a moment after promoting a replica, and asks again a second
  // later: it finds the new master 1-2 s after the switch, so its commands get 5 s here (the
  // module's default) instead of 1 s. GLIDE refuses Sentinel.
  describe.each<[string, LockModuleOptions]>([
    ['ioredis', {}],
    ['iovalkey', { redisClient: 'iovalkey' }],
    ['node-redis', { redisClient: 'node-redis', commandTimeout: 5_000 }],
  ])('on failover (through %s)', (_, client) => {
    beforeEach(start);
    afterEach(stop);

    it('aborts the signal of a lock the replica never got, and the next holder gets a higher fencing token', async () => {
      const [holder, next] = [await boot(client), await boot(client)];
      sentinel.proxy?.stall();
      const lost = await holder.locks.acquire('invoice:7', { ttl: 2_000 });
      await sentinel.killMaster();
      const newMaster = await sentinel.waitForFailover();
      expect(await onServer(newMaster, (server) => server.exists(lost.key))).toBe(0);
      // The watchdog finds the token gone (or cannot renew in time) and says so.
      expect(await aborted(lost)).toBeInstanceOf(LockLostError);
      const lock = await next.locks.acquire('invoice:7', { waitTimeout: 10_000 });
      expect(lock.fencingToken).toBeGreaterThan(lost.fencingToken);
      await lock.release();
    });

    it('lets a caller that waits in line when the master dies wait through the failover, and take the lock after it', async () => {
      const [holder, waiter] = [await boot(client), await boot(client)];
      const held = await holder.locks.acquire('invoice:9', { ttl: 2_000 });
      const waiting = waiter.locks.acquire('invoice:9', { waitTimeout: 30_000 });
      const queue = sideKeyOf(held.key, 'queue');
      while ((await onServer(sentinel.masterPort, (server) => server.zcard(queue))) < 1) {
        await sleep(20);
      }
      await sentinel.killMaster();
      await sentinel.waitForFailover();
      // The holder kept its lock if a renewal reached the new master before the replicated
      // key expired, or was told it lost it; either way it lets go now. The waiter's re-checks
      // met a dead master meanwhile: it waited on instead of failing.
      await held.release();
      const lock = await waiting;
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await lock.release();
    });

    it('keeps a lock the replica acknowledged (waitForReplicas): nobody else gets in after the failover', async () => {
      const holder = await boot({ waitForReplicas: { replicas: 1, timeout: 300 }, ...client });
      const other = await boot(client);
      const lock = await holder.locks.acquire('invoice:8', { ttl: 5_000 });
      await sentinel.killMaster();
      const newMaster = await sentinel.waitForFailover();
      expect(holderIn(await onServer(newMaster, (server) => server.get(lock.key)))).toBe(
        lock.token,
      );
      expect(await other.locks.tryAcquire('invoice:8')).toBeNull();
      // The new master has no replica: renewals are not acknowledged, so they do not count
      // and the holder learns that it lost the lock, rather than trusting a lone master.
      expect(await aborted(lock)).toBeInstanceOf(LockLostError);
    });
  });

  describe('with replication stalled', () => {
    beforeAll(start);
    afterAll(stop);
    afterEach(() => sentinel.proxy?.resume());

    it('fails an acquisition closed when no replica acknowledges it, leaving nothing locked', async () => {
      const app = await boot({ waitForReplicas: { replicas: 1, timeout: 200 } });
      const lock = await app.locks.acquire('report');
      expect(await lock.release()).toBe(true);
      sentinel.proxy?.stall();
      const error = await app.locks.acquire('report').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockReplicationError);
      expect(error).toMatchObject({ acknowledged: 0, wanted: 1 });
      expect(await onServer(sentinel.masterPort, (server) => server.exists(lock.key))).toBe(0);
    });

    it('says degraded in health while no replica acknowledges, and up once one does', async () => {
      const app = await boot({ waitForReplicas: { replicas: 1, timeout: 200 } });
      const indicator = app.module.get(LockHealthIndicator);
      expect(await indicator.isHealthy()).toMatchObject({
        lock: { status: 'up', replicas: '1/1 acknowledged' },
      });
      sentinel.proxy?.stall();
      // A write on the connection that the stalled replica cannot acknowledge.
      await app.locks.acquire('audit').catch(() => undefined);
      expect(await indicator.isHealthy()).toMatchObject({
        lock: { status: 'degraded', replicas: '0/1 acknowledged', message: aString },
      });
      sentinel.proxy?.resume();
      await until(async () => (await indicator.isHealthy()).lock.status === 'up', 10_000);
    });

    it('shares one WAIT between concurrent acquisitions instead of queueing one each', async () => {
      const app = await boot({ waitForReplicas: { replicas: 1, timeout: 300 } });
      const waits = () => onServer(sentinel.masterPort, (server) => commandCalls(server, 'wait'));
      const before = await waits();
      sentinel.proxy?.stall();
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          app.locks.acquire(`batch:${i}`).catch((e: unknown) => e),
        ),
      );
      // Every one fails closed for want of a replica, not for a connection blocked by WAITs.
      for (const outcome of outcomes) expect(outcome).toBeInstanceOf(LockReplicationError);
      // The first WAIT covers what was written before it; the rest share the next one.
      expect((await waits()) - before).toBeLessThanOrEqual(3);
    });

    it('fails a semaphore permit closed too when no replica acknowledges it', async () => {
      const app = await boot({ waitForReplicas: { replicas: 1, timeout: 200 } });
      const permit = await app.locks.acquire('quota', { limit: 2 });
      const holders = sideKeyOf(permit.key, 'holders');
      expect(
        await onServer(sentinel.replicaPort, (server) => server.zscore(holders, permit.token)),
      ).not.toBeNull();
      sentinel.proxy?.stall();
      const error = await app.locks.acquire('quota', { limit: 2 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockReplicationError);
      expect(await onServer(sentinel.masterPort, (server) => server.zcard(holders))).toBe(1);
      sentinel.proxy?.resume();
      expect(await permit.release()).toBe(true);
    });

    it('confirms a lock handed over to a queued waiter against the replicas too', async () => {
      const options = { waitForReplicas: { replicas: 1, timeout: 200 } };
      const [holder, waiter] = [await boot(options), await boot(options)];
      const held = await holder.locks.acquire('batch', { ttl: 10_000 });
      const waited = waiter.locks
        .acquire('batch', { waitTimeout: 10_000 })
        .catch((e: unknown) => e);
      await sleep(200);
      sentinel.proxy?.stall();
      await held.release();
      expect(await waited).toBeInstanceOf(LockReplicationError);
      // The waiter's last try may still be in its WAIT when its wait ends: what that try took is
      // given back right after it, on the same connection.
      const exists = () => onServer(sentinel.masterPort, (server) => server.exists(held.key));
      for (let tries = 0; tries < 50 && (await exists()) === 1; tries++) await sleep(20);
      expect(await exists()).toBe(0);
    });
  });
});
