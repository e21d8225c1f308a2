import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import {
  LockConnectionError,
  LockError,
  LockKeyResolutionError,
  LockModule,
  LockOptionsError,
  LockService,
  StaleFencingTokenError,
  WithLock,
  type LockModuleOptions,
} from '../../src/index.js';
import { bootLockApp, rawClient, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';

type ErrorClass = abstract new (...args: never[]) => Error;

/** One bad input: what is done with it, and the error (or documented answer) it must get. */
interface Case {
  input: string;
  run: () => Promise<unknown>;
  expected: ErrorClass | { resolves: unknown };
}

@Injectable()
class Orders {
  @WithLock('order:<orderId>')
  async pay(orderId: unknown) {
    return orderId;
  }
}

/** A module whose only provider has a `@WithLock` method with the given key. */
function withTemplate(key: string | string[], options: object = {}) {
  @Injectable()
  class Decorated {
    @WithLock(key, options)
    async run(orderId: string, amount: number) {
      return [orderId, amount];
    }
  }
  return Decorated;
}

describe('bad input gets a clear typed error or documented behaviour, and leaves no lock', () => {
  const prefix = uniquePrefix();
  let server: RedisServer;
  let app: LockApp;
  let redis: Redis;
  let orders: Orders;
  const messages: string[] = [];
  const tokens: string[] = [];

  const boot = async (options: LockModuleOptions, providers: (new () => object)[] = []) => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot(options)],
      providers,
    }).compile();
    try {
      await module.init();
    } finally {
      await module.close();
    }
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.url, keyPrefix: prefix, commandTimeout: 500 })],
      providers: [Orders],
    }).compile();
    await module.init();
    app = { module, locks: module.get(LockService), close: () => module.close() };
    orders = module.get(Orders);
  });

  afterAll(async () => {
    await app.close();
    await redis.quit();
    await server.stop();
  });

  const locks = () => app.locks;
  const held = async (key: string, options = {}) => {
    const lock = await locks().acquire(key, options);
    tokens.push(lock.token);
    return lock;
  };

  const cases: Case[] = [
    // Per-call options.
    ...[Infinity, Number.NaN, 1.5, -1, '30s', 0, 2 ** 31].map((ttl) => ({
      input: `ttl ${String(ttl)}`,
      run: () => locks().acquire('k', { ttl: ttl as number }),
      expected: LockOptionsError,
    })),
    {
      input: 'waitTimeout -1',
      run: () => locks().acquire('k', { waitTimeout: -1 }),
      expected: LockOptionsError,
    },
    {
      input: 'watchdog "yes"',
      run: () => locks().acquire('k', { watchdog: 'yes' as never }),
      expected: LockOptionsError,
    },
    {
      input: 'an unknown option',
      run: () => locks().acquire('k', { tll: 1 } as never),
      expected: LockOptionsError,
    },
    // Module options, at boot.
    { input: 'module ttl -1', run: () => boot({ ttl: -1 }), expected: LockOptionsError },
    {
      input: 'keyPrefix with a hash tag',
      run: () => boot({ keyPrefix: '{x}' }),
      expected: LockOptionsError,
    },
    {
      input: 'redis URL of another scheme',
      run: () => boot({ redis: 'http://h:1' }),
      expected: LockOptionsError,
    },
    {
      input: 'redis URL without a host',
      run: () => boot({ redis: 'redis://' }),
      expected: LockOptionsError,
    },
    // Topologies, at boot.
    ...[
      ['RedLock over 2 masters', { redis: ['redis://a:1', 'redis://b:1'] }],
      ['RedLock listing a master twice', { redis: ['redis://a:1', 'redis://b:1', 'redis://a:1'] }],
      ['RedLock with a bad master URL', { redis: ['redis://a:1', 'http://b:1', 'redis://c:1'] }],
      [
        'RedLock with fair: true',
        { redis: ['redis://a:1', 'redis://b:1', 'redis://c:1'], fair: true },
      ],
      ['nodeTimeout without RedLock', { nodeTimeout: 50 }],
      [
        'RedLock with a nodeTimeout at the ttl',
        { redis: ['redis://a:1', 'redis://b:1', 'redis://c:1'], nodeTimeout: 1_000, ttl: 1_000 },
      ],
      [
        'RedLock with commandTimeout',
        { redis: ['redis://a:1', 'redis://b:1', 'redis://c:1'], commandTimeout: 1_000 },
      ],
      [
        'a Cluster config as a RedLock master',
        { redis: ['redis://a:1', 'redis://b:1', { cluster: [{ port: 1 }] }] },
      ],
      [
        'waitForReplicas whose timeout is not below commandTimeout',
        { waitForReplicas: { replicas: 1, timeout: 5_000 }, commandTimeout: 5_000 },
      ],
      ['driftFactor 0.6', { driftFactor: 0.6 }],
      ['Sentinel options without the master name', { redis: { sentinels: [{ port: 1 }] } }],
      ['a cluster config without nodes', { redis: { cluster: [] } }],
      [
        'a cluster config with an ioredis keyPrefix',
        { redis: { cluster: [{ port: 1 }], clusterOptions: { keyPrefix: 'x:' } } },
      ],
      [
        'a cluster config with an ioredis keyPrefix in its redisOptions',
        {
          redis: { cluster: [{ port: 1 }], clusterOptions: { redisOptions: { keyPrefix: 'x:' } } },
        },
      ],
      ['waitForReplicas of 0 replicas', { waitForReplicas: { replicas: 0, timeout: 10 } }],
      ['waitForReplicas without a timeout', { waitForReplicas: { replicas: 1 } }],
      [
        'waitForReplicas with RedLock',
        {
          redis: ['redis://a:1', 'redis://b:1', 'redis://c:1'],
          waitForReplicas: { replicas: 1, timeout: 10 },
        },
      ],
    ].map(([input, options]) => ({
      input: input as string,
      run: () => boot(options as LockModuleOptions),
      expected: LockOptionsError,
    })),
    {
      input: 'store "disk"',
      run: () => boot({ store: 'disk' as never }),
      expected: LockOptionsError,
    },
    // Keys.
    { input: 'an empty key', run: () => locks().acquire(''), expected: LockKeyResolutionError },
    {
      input: 'a 1 MB key',
      run: () => locks().acquire('k'.repeat(1 << 20)),
      expected: LockKeyResolutionError,
    },
    {
      input: 'a number as key',
      run: () => locks().acquire(42 as never),
      expected: LockKeyResolutionError,
    },
    {
      input: 'undefined as key',
      run: () => locks().tryAcquire(undefined as never),
      expected: LockKeyResolutionError,
    },
    {
      input: 'a "}" that closes no hash tag',
      run: () => locks().acquire('a}b'),
      expected: LockKeyResolutionError,
    },
    {
      // Stored as U+FFFD, it would be one key with "a\uFFFD" (and with every other lone one).
      input: 'a lone surrogate in the key',
      run: () => locks().acquire('a\uD800'),
      expected: LockKeyResolutionError,
    },
    {
      input: 'a "{" without "}" (documented: accepted, hashed whole)',
      run: async () => (await held('a{b')).release(),
      expected: { resolves: true },
    },
    // Templates, at boot.
    {
      input: 'an unknown placeholder',
      run: () => boot({ redis: server.url }, [withTemplate('o:<userId>')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'a lone surrogate in the template',
      run: () => boot({ redis: server.url }, [withTemplate('o:\uDC00:<orderId>')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'an unbalanced "<"',
      run: () => boot({ redis: server.url }, [withTemplate('o:<orderId')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'an empty placeholder',
      run: () => boot({ redis: server.url }, [withTemplate('o:<>')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'a position past the parameters',
      run: () => boot({ redis: server.url }, [withTemplate('o:<5>')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'an empty template',
      run: () => boot({ redis: server.url }, [withTemplate('')]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'an empty list of keys',
      run: () => boot({ redis: server.url }, [withTemplate([])]),
      expected: LockKeyResolutionError,
    },
    {
      input: 'onLocked "wait"',
      run: () => boot({ redis: server.url }, [withTemplate('o', { onLocked: 'wait' })]),
      expected: LockOptionsError,
    },
    {
      input: 'holdFor -1',
      run: () => boot({ redis: server.url }, [withTemplate('o', { holdFor: -1 })]),
      expected: LockOptionsError,
    },
    // Argument values, at call time.
    ...([undefined, null, '', {}, [], Number.NaN, Symbol('s'), new Date('nope')] as unknown[]).map(
      (value) => ({
        input: `argument ${String(typeof value === 'symbol' ? 'Symbol' : JSON.stringify(value))}`,
        run: () => orders.pay(value),
        expected: LockKeyResolutionError,
      }),
    ),
    // API misuse.
    {
      input: 'release twice (documented: false)',
      run: async () => {
        const lock = await held('twice');
        await lock.release();
        return lock.release();
      },
      expected: { resolves: false },
    },
    {
      input: 'extend after loss (documented: false)',
      run: async () => {
        const lock = await held('lost', { ttl: 50, watchdog: false });
        await sleep(80);
        return lock.extend();
      },
      expected: { resolves: false },
    },
    {
      input: 'extend with ttl -5',
      run: async () => {
        const lock = await held('ext');
        try {
          return await lock.extend(-5);
        } finally {
          await lock.release();
        }
      },
      expected: LockOptionsError,
    },
    {
      input: 'using with a non-function',
      run: () => locks().using('fn', 'not a function' as never),
      expected: LockOptionsError,
    },
    {
      input: 'a stale fencing token',
      run: async () => {
        await locks().writeFenced(`data:${prefix}r`, 'new', 1_000_000);
        return locks().writeFenced(`data:${prefix}r`, 'old', 999_999);
      },
      expected: StaleFencingTokenError,
    },
    {
      input: 'a Redis URL with bad credentials',
      run: async () => {
        // Only for this case, the server asks for a password (our open connections stay in).
        await redis.config('SET', 'requirepass', 'secret');
        const other = await bootLockApp({
          redis: `redis://:wrong@127.0.0.1:${server.port}`,
          commandTimeout: 500,
        });
        try {
          return await other.locks.acquire('auth');
        } finally {
          await other.close();
          await redis.config('SET', 'requirepass', '');
        }
      },
      expected: LockConnectionError,
    },
    {
      input: 'Redis down at boot (boots; calls fail)',
      run: async () => {
        const other = await bootLockApp({ redis: 'redis://127.0.0.1:1', commandTimeout: 300 });
        try {
          return await other.locks.acquire('down');
        } finally {
          await other.close();
        }
      },
      expected: LockConnectionError,
    },
    {
      input: 'acquire after shutdown',
      run: async () => {
        const other = await bootLockApp({ redis: server.url });
        await other.close();
        return other.locks.acquire('closed');
      },
      expected: LockError,
    },
  ];

  it(`has at least 30 cases (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases.map((c) => [c.input, c] as const))('%s', async (_, { run, expected }) => {
    const outcome = await run().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    if ('resolves' in expected) {
      expect(outcome).toEqual({ value: expected.resolves });
    } else {
      expect('error' in outcome && outcome.error).toBeInstanceOf(expected);
      messages.push((outcome as { error: Error }).error.message);
    }
  });

  it('left no lock behind and printed no token in any error message', async () => {
    expect(await redis.keys(`${prefix}*`)).toEqual([]);
    for (const token of tokens) {
      for (const message of messages) expect(message).not.toContain(token);
    }
  });
});
