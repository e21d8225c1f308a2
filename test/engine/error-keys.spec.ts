import { Redis } from 'ioredis';
import {
  LockConnectionError,
  LockKindError,
  LockLostError,
  LockNotAcquiredError,
  LockQuorumError,
  type LockModuleOptions,
} from '../../src/index.js';
import { freePort } from '../support/redis-server.js';
import {
  aborted,
  bootLockApp,
  rawClient,
  sharedRedisUrl,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';

/** The error a promise rejects with. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => Promise.reject(new Error('expected a rejection')),
    (error: unknown) => error,
  );

/**
 * `error.key` has one meaning in every error about a lock: the key as the caller named it,
 * without the module's keyPrefix, whichever part of the library (the engine, a store, a
 * script's reply, a timeout) raised the error.
 */
describe('the key that lock errors name', () => {
  const apps: LockApp[] = [];
  const boot = async (options: LockModuleOptions) => {
    const app = await bootLockApp(options);
    apps.push(app);
    return app;
  };

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
  });

  describe('on Redis', () => {
    const keyPrefix = uniquePrefix();
    let app: LockApp;
    let redis: Redis;

    beforeAll(async () => {
      app = await boot({ redis: sharedRedisUrl(), keyPrefix });
      redis = rawClient(sharedRedisUrl());
    });

    afterAll(async () => {
      await redis.quit();
    });

    it('is the name for a lock held by another owner', async () => {
      const lock = await app.locks.acquire('order:1');
      const error = await failure(app.locks.acquire('order:1', { waitTimeout: 0 }));
      await lock.release();
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error).toMatchObject({ key: 'order:1' });
    });

    it('is the name for a key that the store holds as another kind', async () => {
      const permit = await app.locks.acquire('pool', { limit: 2 });
      const error = await failure(app.locks.acquire('pool', { limit: 3, waitTimeout: 0 }));
      await permit.release();
      expect(error).toBeInstanceOf(LockKindError);
      expect(error).toMatchObject({ key: 'pool' });
      expect((error as Error).message).toMatch(/^Lock "pool" is held as/);
    });

    it('is the name for an upgrade inside work that holds the key', async () => {
      const error = await failure(
        app.locks.using('doc', () => app.locks.using('doc', () => undefined), { mode: 'read' }),
      );
      expect(error).toBeInstanceOf(LockKindError);
      expect(error).toMatchObject({ key: 'doc' });
    });

    it('is the name for a lock lost behind the holder', async () => {
      const lock = await app.locks.acquire('lost', { ttl: 300 });
      await redis.del(lock.key);
      const reason = await aborted(lock);
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason).toMatchObject({ key: 'lost' });
    });
  });

  it('is the name for a key held as another kind in memory', async () => {
    const app = await boot({ store: 'memory', keyPrefix: 'mem:' });
    const permit = await app.locks.acquire('pool', { limit: 2 });
    const error = await failure(app.locks.acquire('pool', { limit: 3, waitTimeout: 0 }));
    await permit.release();
    expect(error).toBeInstanceOf(LockKindError);
    expect(error).toMatchObject({ key: 'pool' });
  });

  it('is the name when Redis does not answer, and the timeout is the cause', async () => {
    const app = await boot({
      redis: `redis://127.0.0.1:${await freePort()}`,
      keyPrefix: 'down:',
      commandTimeout: 200,
    });
    const error = await failure(app.locks.acquire('x', { waitTimeout: 0 }));
    expect(error).toBeInstanceOf(LockConnectionError);
    expect(error).toMatchObject({ key: 'x' });
    expect((error as LockConnectionError).cause).toBeInstanceOf(Error);
    expect((error as LockConnectionError).cause).toMatchObject({ name: 'TimeoutError' });
  });

  it('is the name when RedLock reaches no majority', async () => {
    const ports = [await freePort(), await freePort(), await freePort()];
    const app = await boot({
      redis: ports.map((port) => `redis://127.0.0.1:${port}`),
      keyPrefix: 'quorum:',
      nodeTimeout: 100,
    });
    const error = await failure(app.locks.acquire('x', { waitTimeout: 0 }));
    expect(error).toBeInstanceOf(LockQuorumError);
    expect(error).toMatchObject({ key: 'x' });
    expect((error as LockQuorumError).cause).toBeInstanceOf(Error);
  });
});
