import { createClient } from 'redis';
import { LockOptionsError, type LockModuleOptions } from '../../src/index.js';
import { LockProcess } from '../support/lock-child.js';
import { bootLockApp, sharedRedisUrl } from '../support/lock-app.js';

/** The error a boot with `options` fails with (none: the boot succeeded and was closed). */
async function bootError(options: LockModuleOptions): Promise<unknown> {
  return bootLockApp(options).then(
    (app) => app.close(),
    (error: unknown) => error,
  );
}

describe('the client library, at boot', () => {
  it('refuses an object passed as redis that is no client the module knows', async () => {
    class CacheClient {
      get(key: string): string {
        return key;
      }
    }
    const error = await bootError({ redis: new CacheClient() });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error).toMatchObject({
      option: 'redis',
      message: expect.stringContaining('an object of class CacheClient') as unknown,
    });
  });

  it('refuses an option that the chosen library would not honour, naming it', async () => {
    const error = await bootError({
      redis: { host: '127.0.0.1', port: 6379, retryStrategy: () => 100 },
      redisClient: 'node-redis',
    });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error).toMatchObject({ option: 'redis.retryStrategy' });
  });

  it('refuses an unknown redisClient, and a node-redis client with a keyPrefix', async () => {
    expect(await bootError({ redisClient: 'redis' as never })).toMatchObject({
      option: 'redisClient',
    });
    const prefixed = createClient({ url: sharedRedisUrl(), keyPrefix: 'app:' });
    expect(await bootError({ redis: prefixed })).toMatchObject({
      option: 'redis',
      message: expect.stringContaining('without a keyPrefix') as unknown,
    });
  });

  it('without the chosen package installed, fails saying what to install; with only node-redis, locks', async () => {
    const url = sharedRedisUrl();
    const failure = (options: LockModuleOptions, hide: string[]) =>
      LockProcess.start(options, hide).then(
        async (started) => {
          await started.close();
          return 'booted';
        },
        (error: unknown) => String(error),
      );
    expect(await failure({ redis: url, redisClient: 'node-redis' }, ['redis'])).toMatch(
      /LockOptionsError: Invalid lock option .*redisClient.*npm install redis\b/,
    );
    expect(await failure({ redis: url }, ['ioredis'])).toMatch(
      /LockOptionsError: Invalid lock option .*redisClient.*npm install ioredis\b/,
    );
    // An app with node-redis and neither ioredis nor iovalkey.
    const only = await LockProcess.start({ redis: url, redisClient: 'node-redis' }, [
      'ioredis',
      'iovalkey',
    ]);
    try {
      const lock = await only.acquire('boot:only-node-redis');
      expect(lock.fencingToken).toBeGreaterThan(0);
      expect(await lock.release()).toBe(true);
    } finally {
      await only.close();
    }
  }, 90_000);
});
