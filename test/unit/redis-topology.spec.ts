import { Cluster, Redis } from 'ioredis';
import { isRedisClient } from '../../src/store/redis/ioredis/ioredis.connections.js';
import { addressOf, resolveRedis } from '../../src/store/redis/redis.options.js';
import { expectOptionError } from '../support/option-error.js';

// Clients that never connect (lazyConnect), to be told apart from options as a user's would be.
const client = new Redis({ host: 'r', port: 7000, lazyConnect: true });
const clusterClient = new Cluster([{ host: 'c', port: 7000 }], { lazyConnect: true });
const prefixedClusterClient = new Cluster([{ port: 7000 }], {
  lazyConnect: true,
  redisOptions: { keyPrefix: 'app:' },
});
const masters = ['redis://a:1', 'redis://b:1', 'redis://c:1'];

afterAll(() => {
  for (const each of [client, clusterClient, prefixedClusterClient]) each.disconnect();
});

describe('the topology of the redis option', () => {
  it('is one server by default, for a URL, ioredis options or an ioredis client', () => {
    expect(resolveRedis(undefined)).toEqual({
      topology: 'single',
      config: 'redis://127.0.0.1:6379',
    });
    for (const url of ['redis://h:1', 'rediss://u:p@h:1/2', 'redis://h/']) {
      expect(resolveRedis(url)).toEqual({ topology: 'single', config: url });
    }
    const options = { host: 'h', port: 1, password: 'p' };
    expect(resolveRedis(options)).toEqual({ topology: 'single', config: options });
    expect(resolveRedis(client)).toEqual({ topology: 'single', config: client });
  });

  it('is one server for a Sentinel-managed master', () => {
    const sentinel = { sentinels: [{ host: 's', port: 26380 }], name: 'mymaster' };
    expect(resolveRedis(sentinel)).toEqual({ topology: 'single', config: sentinel });
  });

  it('is a Cluster for a Cluster config or client, and RedLock for an array', () => {
    const config = { cluster: [{ port: 7000 }], clusterOptions: { scaleReads: 'master' } };
    expect(resolveRedis(config)).toEqual({ topology: 'cluster', config });
    expect(resolveRedis({ cluster: [{ port: 7000 }] })).toMatchObject({ topology: 'cluster' });
    expect(resolveRedis(clusterClient)).toEqual({ topology: 'cluster', config: clusterClient });
    const nodes = [masters[0], { host: 'b', port: 1 }, client];
    expect(resolveRedis(nodes)).toEqual({ topology: 'redlock', nodes });
  });

  const rules: [string, unknown, string, string][] = [
    [
      'a number',
      6379,
      'redis',
      'expected a redis:// URL, ioredis options, a client, a Cluster, or an array of masters ' +
        '(clients: ioredis, iovalkey, node-redis), got 6379',
    ],
    ...['http://h:1', 'redis://', 'localhost', ''].map((url): [string, unknown, string, string] => [
      `the URL ${JSON.stringify(url)}`,
      url,
      'redis',
      `expected a URL such as "redis://host:6379/0", got "${url}"`,
    ]),
    [
      'a URL whose path is not a database',
      'redis://h:1/cache',
      'redis',
      'expected a URL whose path is a database number',
    ],
    [
      'Sentinel options without a master name',
      { sentinels: [{ port: 1 }] },
      'redis.name',
      'expected the name of the master the sentinels monitor, e.g. "mymaster", got undefined',
    ],
    ...[[], {}, ['s:1']].map((sentinels): [string, unknown, string, string] => [
      `sentinels ${JSON.stringify(sentinels)}`,
      { sentinels, name: 'mymaster' },
      'redis.sentinels',
      'expected a non-empty array of { host, port }',
    ]),
    ...[[], 'c:7000'].map((cluster): [string, unknown, string, string] => [
      `a Cluster config with nodes ${JSON.stringify(cluster)}`,
      { cluster },
      'redis.cluster',
      'expected a non-empty array of nodes',
    ]),
    [
      'a Cluster config with an unknown field',
      { cluster: [{ port: 1 }], nodes: [] },
      'nodes',
      'redis: Invalid lock option "nodes": expected no such option (known: cluster, clusterOptions)',
    ],
    [
      'Cluster options that are not an object',
      { cluster: [{ port: 1 }], clusterOptions: 'fast' },
      'redis.clusterOptions',
      'expected ioredis ClusterOptions, got "fast"',
    ],
    ...[{ keyPrefix: 'app:' }, { redisOptions: { keyPrefix: 'app:' } }].map(
      (clusterOptions): [string, unknown, string, string] => [
        `a Cluster config with an ioredis keyPrefix in ${JSON.stringify(clusterOptions)}`,
        { cluster: [{ port: 1 }], clusterOptions },
        'redis',
        'expected a Cluster client without an ioredis keyPrefix, which would move the keys of ' +
          'one lock into different hash slots (use the module keyPrefix option instead), got "app:"',
      ],
    ),
    [
      'RedLock over 2 masters',
      masters.slice(0, 2),
      'redis',
      'expected at least 3 masters for RedLock (fewer tolerate no failure; use a single Redis instead)',
    ],
    [
      'RedLock listing a master twice (by URL and by options)',
      ['redis://a:6379', 'redis://b:1', { host: 'a' }],
      'redis[2]',
      'expected a master not listed before (a:6379 is), as RedLock needs independent masters, got "a:6379"',
    ],
    [
      'RedLock with a bad master URL',
      ['redis://a:1', 'http://b:1', 'redis://c:1'],
      'redis[1]',
      'expected a URL such as "redis://host:6379/0", got "http://b:1"',
    ],
    [
      'RedLock with a number for a master',
      [...masters, 6379],
      'redis[3]',
      'expected a redis:// URL, ioredis options or a client (clients: ioredis, iovalkey, node-redis), got 6379',
    ],
    [
      'RedLock with a Cluster config for a master',
      [...masters, { cluster: [{ port: 1 }] }],
      'redis[3]',
      'expected a single Redis master here, not a Cluster, got "a Cluster"',
    ],
    [
      'RedLock with Sentinel options without sentinels for a master',
      [...masters, { sentinels: [], name: 'm' }],
      'redis[3].sentinels',
      'expected a non-empty array of { host, port }',
    ],
  ];

  it.each(rules)('refuses %s, naming the part', (_, value, option, expected) => {
    expectOptionError(() => resolveRedis(value), option, expected);
  });

  it('refuses a Cluster client with an ioredis keyPrefix, and a Cluster client as a master', () => {
    expectOptionError(() => resolveRedis(prefixedClusterClient), 'redis', 'got "app:"');
    expectOptionError(
      () => resolveRedis([...masters, clusterClient]),
      'redis[3]',
      'not a Cluster, got "a Cluster"',
    );
  });
});

describe('passwords in error messages', () => {
  it('are hidden in a URL that is refused, to the last "@"', () => {
    for (const [url, shown] of [
      ['redis://user:secret@h:1/cache', 'redis://***@h:1/cache'],
      ['redis://:se@cret@h:1/cache', 'redis://***@h:1/cache'],
      ['http://:secret@h:1', 'http://***@h:1'],
      ['user:secret@h:6379', '***@h:6379'],
    ]) {
      const error = expectOptionError(() => resolveRedis(url), 'redis', `got "${shown}"`);
      expect(error.value).toBe(shown);
    }
  });

  it('are hidden in the masters of a RedLock that has too few', () => {
    const error = expectOptionError(
      () => resolveRedis(['redis://:secret@a:1', { host: 'b', password: 'secret' }]),
      'redis',
      'got an array',
    );
    expect(error.value).toEqual(['redis://***@a:1', 'a server']);
  });

  it('are not shown with a Cluster given as a RedLock master', () => {
    const error = expectOptionError(
      () =>
        resolveRedis([
          ...masters,
          { cluster: [{ port: 1 }], clusterOptions: { redisOptions: { password: 'secret' } } },
        ]),
      'redis[3]',
      'got "a Cluster"',
    );
    expect(error.value).toBe('a Cluster');
  });

  it('are not in the address of a master', () => {
    expect(addressOf('redis://user:secret@h:7000/1')).toBe('h:7000');
    expect(addressOf({ host: 'h', password: 'secret' })).toBe('h:6379');
  });
});

describe('the address of a server', () => {
  it('is host:port, with the defaults of ioredis', () => {
    expect(addressOf('redis://h')).toBe('h:6379');
    expect(addressOf('rediss://h:7000')).toBe('h:7000');
    expect(addressOf({})).toBe('127.0.0.1:6379');
    expect(addressOf({ host: 'h', port: 7000 })).toBe('h:7000');
    expect(addressOf(client)).toBe('r:7000');
  });

  it('is the socket path of a Unix socket', () => {
    expect(addressOf({ path: '/tmp/redis.sock', host: 'h' })).toBe('/tmp/redis.sock');
  });

  it("is the master's name and its first sentinel for Sentinel", () => {
    expect(
      addressOf({
        name: 'mymaster',
        sentinels: [
          { host: 's', port: 26380 },
          { host: 't', port: 26381 },
        ],
      }),
    ).toBe('mymaster via sentinel s:26380');
    expect(addressOf({ name: 'mymaster', sentinels: [{}] })).toBe(
      'mymaster via sentinel 127.0.0.1:26379',
    );
  });
});

describe('an ioredis client', () => {
  it('is told from options by its methods, for Redis and Cluster alike', () => {
    expect(isRedisClient(client)).toBe(true);
    expect(isRedisClient(clusterClient)).toBe(true);
    for (const value of [{ host: 'h' }, { cluster: [] }, null, 'redis://h', [client]]) {
      expect(isRedisClient(value)).toBe(false);
    }
  });
});
