import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  LockModule,
  LockOptionsError,
  LockService,
  type LockModuleOptions,
} from '../../src/index.js';
import { bootLockApp, rawClient, sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

const boot = (options: unknown) =>
  Test.createTestingModule({
    imports: [LockModule.forRoot(options as LockModuleOptions)],
  }).compile();

describe('LockModule options are validated at boot', () => {
  const invalid: [string, object, string][] = [
    ['negative ttl', { ttl: -1 }, 'ttl'],
    ['fractional ttl', { ttl: 1.5 }, 'ttl'],
    ['NaN ttl', { ttl: Number.NaN }, 'ttl'],
    ['infinite ttl', { ttl: Infinity }, 'ttl'],
    ['string ttl', { ttl: '30s' }, 'ttl'],
    ['ttl below the minimum', { ttl: 5 }, 'ttl'],
    ['ttl beyond a timer', { ttl: 2 ** 31 }, 'ttl'],
    ['negative waitTimeout', { waitTimeout: -1 }, 'waitTimeout'],
    ['fractional waitTimeout', { waitTimeout: 0.5 }, 'waitTimeout'],
    ['non-boolean watchdog', { watchdog: 'yes' }, 'watchdog'],
    ['empty keyPrefix', { keyPrefix: '' }, 'keyPrefix'],
    ['keyPrefix with a hash tag', { keyPrefix: '{app}:' }, 'keyPrefix'],
    ['zero commandTimeout', { commandTimeout: 0 }, 'commandTimeout'],
    ['an unknown option', { tll: 1_000 }, 'tll'],
    ['a URL of another scheme', { redis: 'http://localhost:6379' }, 'redis'],
    ['a malformed URL', { redis: 'redis://' }, 'redis'],
    ['a URL with a non-numeric database', { redis: 'redis://localhost:6379/cache' }, 'redis'],
    ['not a URL at all', { redis: 'localhost' }, 'redis'],
    ['a number for redis', { redis: 6379 }, 'redis'],
    ['an unknown store', { store: 'disk' }, 'store'],
    ['a Redis URL with the memory store', { store: 'memory', redis: 'redis://h:1' }, 'redis'],
  ];

  it.each(invalid)(
    '%s fails the boot with a LockOptionsError naming it',
    async (_, options, name) => {
      const error = await boot(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as LockOptionsError).option).toBe(name);
      expect((error as Error).message).toContain(`"${name}"`);
    },
  );

  it('names the value it got in the message', async () => {
    await expect(boot({ ttl: -1 })).rejects.toThrow('got -1');
    await expect(boot({ ttl: '30s' })).rejects.toThrow('got "30s"');
  });

  it('validates what a forRootAsync factory returns', async () => {
    const error = await Test.createTestingModule({
      imports: [LockModule.forRootAsync({ useFactory: () => ({ waitTimeout: -10 }) })],
    })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).option).toBe('waitTimeout');
  });
});

describe('LockModule wiring', () => {
  it('forRootAsync with an injected config and isGlobal provides LockService to other modules', async () => {
    @Injectable()
    class Config {
      readonly options: LockModuleOptions = { redis: sharedRedisUrl(), keyPrefix: uniquePrefix() };
    }
    @Module({ providers: [Config], exports: [Config] })
    class ConfigModule {}

    @Injectable()
    class Orders {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Orders] })
    class OrdersModule {}

    const module = await Test.createTestingModule({
      imports: [
        LockModule.forRootAsync({
          imports: [ConfigModule],
          inject: [Config],
          useFactory: (config: Config) => config.options,
          isGlobal: true,
        }),
        OrdersModule,
      ],
    }).compile();
    await module.init();
    const orders = module.get(Orders);
    const lock = await orders.locks.acquire('wired');
    expect(await lock.release()).toBe(true);
    await module.close();
  });
});

describe('shutdown', () => {
  it('releases the locks the process still holds and closes the connection it created', async () => {
    const redis = rawClient(sharedRedisUrl());
    const app = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: uniquePrefix() });
    const locks = await Promise.all(['x', 'y', 'z'].map((key) => app.locks.acquire(key)));
    const waiter = app.locks.acquire('x', { waitTimeout: 30_000 }).catch((e: unknown) => e);
    await app.close();
    expect(await redis.exists(...locks.map((lock) => lock.key))).toBe(0);
    // Work still running under them learns that it is no longer protected.
    expect(locks.map((lock) => lock.signal.aborted)).toEqual([true, true, true]);
    expect(await waiter).toMatchObject({ name: 'LockShuttingDownError', key: 'x' });
    await expect(app.locks.acquire('after')).rejects.toThrow(/shutting down/);
    await redis.quit();
  });

  it('never closes a client it was given', async () => {
    const client = new Redis(sharedRedisUrl());
    const app = await bootLockApp({ redis: client, keyPrefix: uniquePrefix() });
    const lock = await app.locks.acquire('borrowed');
    await app.close();
    expect(client.status).toBe('ready');
    expect(await client.exists(lock.key)).toBe(0);
    await client.quit();
  });
});
