import { hostname } from 'node:os';
import { LockModule, MemoryLockSpace, type LockModuleOptions } from '../../src/index.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import { expectOptionError } from '../support/option-error.js';
import { OwnStore } from '../support/own-store.js';

const MAX = 2 ** 31 - 1;
const masters = ['redis://a:1', 'redis://b:1', 'redis://c:1'];
const resolve = (options: unknown) => resolveModuleOptions(options as LockModuleOptions);

describe('module options: defaults', () => {
  const defaults = {
    store: 'redis',
    fair: true,
    redis: { topology: 'single', config: 'redis://127.0.0.1:6379' },
    redisClient: 'ioredis',
    keyPrefix: 'lock:',
    ttl: 30_000,
    waitTimeout: 10_000,
    watchdog: true,
    shutdownGrace: 20_000,
    commandTimeout: 5_000,
    nodeTimeout: 250,
    driftFactor: 0.01,
    waitForReplicas: undefined,
    instanceId: `${hostname()}:${process.pid}`,
  };

  it('fills in every default when nothing is given', () => {
    expect(resolve(undefined)).toEqual(defaults);
    expect(resolve({})).toEqual(defaults);
  });

  it('takes the memory store, and isGlobal (which the module builder reads)', () => {
    // The memory store's options hold no Redis topology: each backend has a shape of its own.
    const resolved = resolve({ store: 'memory', isGlobal: true });
    expect(resolved).toEqual({
      store: 'memory',
      fair: true,
      keyPrefix: 'lock:',
      ttl: 30_000,
      waitTimeout: 10_000,
      watchdog: true,
      shutdownGrace: 20_000,
      commandTimeout: 5_000,
      driftFactor: 0.01,
      memorySpace: undefined,
      instanceId: `${hostname()}:${process.pid}`,
    });
    expect(resolved).not.toHaveProperty('redis');
  });

  it('takes a memory space of its own with the memory store', () => {
    const memorySpace = new MemoryLockSpace();
    expect(resolve({ store: 'memory', memorySpace })).toMatchObject({ memorySpace });
  });

  it('refuses a memorySpace without the memory store, or that is not a MemoryLockSpace', () => {
    expectOptionError(
      () => resolve({ memorySpace: new MemoryLockSpace() }),
      'memorySpace',
      `nothing unless store is 'memory'`,
    );
    expectOptionError(
      () => resolve({ store: 'memory', memorySpace: {} }),
      'memorySpace',
      'a MemoryLockSpace',
    );
  });

  it('takes a store of the app’s own that has the contract’s methods and declares its capabilities', () => {
    const own = new OwnStore(new MemoryLockStore(false, new MemoryLockSpace().state, 'lock:'));
    // Whether waiters keep a line is the store's to declare (this one does not).
    expect(resolve({ store: own, ttl: 5_000 })).toMatchObject({
      store: 'own',
      own,
      fair: false,
      ttl: 5_000,
    });
    expectOptionError(() => resolve({ store: own, fair: true }), 'fair', 'a store of your own');
    const sessions = Object.create(own) as OwnStore;
    Object.defineProperty(sessions, 'capabilities', {
      value: { ...own.capabilities, keepAlive: 'session' },
    });
    expectOptionError(
      () => resolve({ store: sessions, watchdog: false }),
      'watchdog',
      'nothing with an own store',
    );
    expectOptionError(
      () => resolve({ store: own, redis: 'redis://a:1' }),
      'redis',
      'nothing with a store of your own',
    );
    expectOptionError(
      () => resolve({ store: { capabilities: own.capabilities } }),
      'store.acquire',
      'a method',
    );
    const throttleless = Object.create(own) as OwnStore;
    Object.defineProperty(throttleless, 'capabilities', {
      value: { ...own.capabilities, throttle: 'sometimes' },
    });
    expectOptionError(
      () => resolve({ store: throttleless }),
      'store.capabilities.throttle',
      'a value that LockStoreCapabilities allows',
    );
  });

  it('is not fair by default with RedLock, and accepts fair: false there', () => {
    for (const fair of [undefined, false]) {
      expect(resolve({ redis: masters, fair })).toMatchObject({ fair: false });
    }
  });

  it.each([
    {
      ttl: 10,
      waitTimeout: 0,
      commandTimeout: 1,
      keyPrefix: 'k'.repeat(256),
      driftFactor: 0,
      watchdog: false,
      fair: false,
      shutdownGrace: 0,
    },
    { ttl: MAX, waitTimeout: Infinity, driftFactor: 0.49, shutdownGrace: MAX },
    { redis: masters, ttl: 1_000, nodeTimeout: 500 },
  ])('keeps what it is given at the edges of each range (case %#)', ({ redis, ...edges }) => {
    expect(resolve({ redis, ...edges })).toMatchObject(edges);
  });

  it('waits for replicas as far as two WAITs fit in commandTimeout and below the ttl', () => {
    const waitForReplicas = { replicas: 2, timeout: 2_350 };
    expect(resolve({ waitForReplicas })).toMatchObject({ waitForReplicas });
    expect(resolve({ ttl: 100, waitForReplicas: { replicas: 1, timeout: 99 } })).toMatchObject({
      waitForReplicas: { replicas: 1, timeout: 99 },
    });
  });
});

describe('module options: each rule names the option it refuses', () => {
  const range = (min: number) => `an integer number of milliseconds from ${min} to ${MAX}`;
  const rules: [string, unknown, string, string][] = [
    ['options that are not an object', [], 'options', 'expected an object, got an array'],
    [
      'an unknown option',
      { tll: 1 },
      'tll',
      'no such option (known: redis, redisClient, zookeeper, postgres, keyPrefix, ttl, waitTimeout, watchdog, ' +
        'shutdownGrace, commandTimeout, store, memorySpace, fair, nodeTimeout, driftFactor, waitForReplicas, isGlobal, instanceId)',
    ],
    ['an empty instanceId', { instanceId: '' }, 'instanceId', 'a non-empty string'],
    [
      'an unknown store',
      { store: 'disk' },
      'store',
      `expected 'redis', 'memory' or a store of your own (LockStore), got "disk"`,
    ],
    [
      'a Sentinel through GLIDE, which does not follow one',
      { redis: { sentinels: [{ port: 26379 }], name: 'm' }, redisClient: 'glide' },
      'redis.sentinels',
      "an option that redisClient 'glide' takes (host, port, username, password, db, tls, " +
        'connectTimeout); pass a GLIDE client of your own for the others',
    ],
    [
      'a Cluster option that the module cannot give GLIDE',
      { redis: { cluster: [7000], clusterOptions: { scaleReads: 'all' } }, redisClient: 'glide' },
      'redis.clusterOptions.scaleReads',
      "nothing here with redisClient 'glide'",
    ],
    [
      'redis beside the memory store',
      { store: 'memory', redis: 'redis://h:1' },
      'redis',
      `expected nothing with store: 'memory'`,
    ],
    [
      'nodeTimeout without RedLock',
      { nodeTimeout: 50 },
      'nodeTimeout',
      'expected nothing: it applies to RedLock only (redis: an array of masters), got 50',
    ],
    [
      'commandTimeout with RedLock',
      { redis: masters, commandTimeout: 1_000 },
      'commandTimeout',
      'expected nothing with RedLock, where nodeTimeout bounds each master instead',
    ],
    [
      'fair: true with RedLock',
      { redis: masters, fair: true },
      'fair',
      'expected false or nothing with RedLock (redis: an array): waiters are not queued',
    ],
    ...[-1, 1.5, Number.NaN, Infinity, '30s', 9, 2 ** 31].map(
      (ttl): [string, unknown, string, string] => [
        `ttl ${String(ttl)}`,
        { ttl },
        'ttl',
        `expected ${range(10)}, got`,
      ],
    ),
    ['commandTimeout 0', { commandTimeout: 0 }, 'commandTimeout', `expected ${range(1)}, got 0`],
    ['nodeTimeout 0', { redis: masters, nodeTimeout: 0 }, 'nodeTimeout', range(1)],
    [
      'a nodeTimeout over half the ttl',
      { redis: masters, ttl: 1_000, nodeTimeout: 501 },
      'nodeTimeout',
      'expected at most half the ttl (1000 ms), and better far below it, got 501',
    ],
    [
      'a default nodeTimeout over half the ttl',
      { redis: masters, ttl: 400 },
      'nodeTimeout',
      'at most half the ttl (400 ms), and better far below it; this is its default: set nodeTimeout lower, got 250',
    ],
    ['fair "yes"', { fair: 'yes' }, 'fair', 'expected a boolean, got "yes"'],
    ...['', '{app}:', 'a}', 'k'.repeat(257), 42, 'app\uD800:'].map(
      (keyPrefix): [string, unknown, string, string] => [
        `keyPrefix ${JSON.stringify(keyPrefix).slice(0, 20)}`,
        { keyPrefix },
        'keyPrefix',
        'expected a non-empty string of at most 256 characters without "{" or "}"',
      ],
    ),
    ...[-1, 0.5, '1s'].map((waitTimeout): [string, unknown, string, string] => [
      `waitTimeout ${String(waitTimeout)}`,
      { waitTimeout },
      'waitTimeout',
      `expected ${range(0)}, or Infinity, got`,
    ]),
    ['watchdog 1', { watchdog: 1 }, 'watchdog', 'expected a boolean, got 1'],
    ...[-1, 0.5, Infinity, '20s'].map((shutdownGrace): [string, unknown, string, string] => [
      `shutdownGrace ${String(shutdownGrace)}`,
      { shutdownGrace },
      'shutdownGrace',
      `expected ${range(0)}, got`,
    ]),
    ...[0.5, -0.01, Number.NaN, Infinity, '0.1'].map(
      (driftFactor): [string, unknown, string, string] => [
        `driftFactor ${String(driftFactor)}`,
        { driftFactor },
        'driftFactor',
        'expected a number from 0 to below 0.5',
      ],
    ),
    ...(
      [
        ['the memory store', { store: 'memory' }],
        ['RedLock', { redis: masters }],
        ['a Cluster', { redis: { cluster: [{ port: 1 }] } }],
      ] as const
    ).map(([where, options]): [string, unknown, string, string] => [
      `waitForReplicas with ${where}`,
      { ...options, waitForReplicas: { replicas: 1, timeout: 10 } },
      'waitForReplicas',
      'expected nothing: it applies to one Redis or a Sentinel-managed master only',
    ]),
    [
      'waitForReplicas that is not an object',
      { waitForReplicas: 1 },
      'waitForReplicas',
      'expected an object, got 1',
    ],
    [
      'an unknown field of waitForReplicas',
      { waitForReplicas: { replicas: 1, timeout: 10, within: 5 } },
      'within',
      'waitForReplicas: Invalid lock option "within": expected no such option (known: replicas, timeout)',
    ],
    ...[0, 1.5, '1', undefined].map((replicas): [string, unknown, string, string] => [
      `waitForReplicas of ${JSON.stringify(replicas)} replicas`,
      { waitForReplicas: { replicas, timeout: 10 } },
      'waitForReplicas.replicas',
      'expected an integer of at least 1',
    ]),
    ...[undefined, 0, -1].map((timeout): [string, unknown, string, string] => [
      `waitForReplicas with timeout ${String(timeout)}`,
      { waitForReplicas: { replicas: 1, timeout } },
      'waitForReplicas.timeout',
      `expected ${range(1)}`,
    ]),
    [
      'waitForReplicas whose two WAITs do not fit in commandTimeout',
      { waitForReplicas: { replicas: 1, timeout: 2_351 } },
      'waitForReplicas.timeout',
      'expected at most 2350 ms (two WAITs, each up to 150 ms late, within commandTimeout, ' +
        '5000 ms, and below the ttl, 30000 ms), got 2351',
    ],
    [
      'waitForReplicas that outlasts the ttl',
      { ttl: 100, waitForReplicas: { replicas: 1, timeout: 100 } },
      'waitForReplicas.timeout',
      'expected at most 99 ms',
    ],
    [
      'exceptionFilter from an options factory, too late to register a filter or not',
      { store: 'memory', exceptionFilter: false },
      'exceptionFilter',
      'expected it beside useFactory, useClass or useExisting in forRootAsync, not from the ' +
        'options factory, got false',
    ],
  ];

  it.each(rules)('%s', (_, options, option, expected) => {
    expectOptionError(() => resolve(options), option, expected);
  });

  it('refuses an exceptionFilter that is not a boolean where the module is defined', () => {
    const exceptionFilter = 'off' as unknown as boolean;
    expectOptionError(
      () => LockModule.forRoot({ store: 'memory', exceptionFilter }),
      'exceptionFilter',
      'expected a boolean, got "off"',
    );
    expectOptionError(
      () => LockModule.forRootAsync({ useFactory: () => ({}), exceptionFilter }),
      'exceptionFilter',
      'expected a boolean, got "off"',
    );
  });

  it('says which option it refuses in the whole message', () => {
    expectOptionError(
      () => resolve({ ttl: -1 }),
      'ttl',
      `Invalid lock option "ttl": expected ${range(10)}, got -1`,
    );
  });
});

describe('module options: of two invalid options, the one checked first is reported', () => {
  const cases: [string, object, string][] = [
    ['tll', { tll: 1, store: 'disk' }, 'no such option'],
    ['store', { store: 'disk', redis: 'http://h' }, 'or'],
    ['redis', { store: 'memory', redis: 'http://h' }, 'nothing with store'],
    ['redis', { redis: 'http://h', nodeTimeout: 5 }, 'a URL such as'],
    ['nodeTimeout', { nodeTimeout: 5, ttl: -1 }, 'it applies to RedLock only'],
    ['commandTimeout', { redis: masters, commandTimeout: 5, fair: true }, 'nothing with RedLock'],
    ['fair', { redis: masters, fair: true, ttl: -1 }, 'false or nothing'],
    ['ttl', { ttl: -1, commandTimeout: 0 }, 'from 10'],
    ['commandTimeout', { commandTimeout: 0, fair: 1 }, 'from 1'],
    ['nodeTimeout', { redis: masters, nodeTimeout: 0, fair: 1 }, 'from 1'],
    ['nodeTimeout', { redis: masters, ttl: 1_000, nodeTimeout: 600, fair: 1 }, 'at most half'],
    ['fair', { fair: 1, keyPrefix: '' }, 'a boolean'],
    ['keyPrefix', { keyPrefix: '', waitTimeout: -1 }, 'a non-empty string'],
    ['waitTimeout', { waitTimeout: -1, watchdog: 1 }, 'or Infinity'],
    ['watchdog', { watchdog: 1, driftFactor: 1 }, 'a boolean'],
    ['driftFactor', { driftFactor: 1, waitForReplicas: 5 }, 'from 0 to below 0.5'],
    ['waitForReplicas', { store: 'memory', waitForReplicas: 5 }, 'one Redis'],
    ['waitForReplicas', { waitForReplicas: 5 }, 'an object'],
    ['within', { waitForReplicas: { within: 1, replicas: 0 } }, 'no such option'],
    ['waitForReplicas.replicas', { waitForReplicas: { replicas: 0, timeout: 0 } }, 'at least 1'],
  ];

  it.each(cases)('%s (%j)', (option, options, expected) => {
    expectOptionError(() => resolve(options), option, expected);
  });
});
