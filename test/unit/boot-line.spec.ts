import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cluster, Redis } from 'ioredis';
import { LockModule, type LockModuleOptions } from '../../src/index.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { describeStore } from '../../src/store/describe-store.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import { OwnStore } from '../support/own-store.js';

const SECRET = 's3cr3t-pw';
const lineFor = (options: LockModuleOptions) => describeStore(resolveModuleOptions(options));

/**
 * Each module logs one line at boot that names its backend and where it is, so that an operator
 * sees where an instance's locks live; never a password, wherever the configuration holds one.
 */
describe('the line that names the backend at boot', () => {
  it.each<[string, LockModuleOptions, string]>([
    ['memory', { store: 'memory' }, 'Locks in memory, in this process only'],
    [
      'a store of the app’s own',
      { store: new OwnStore(new MemoryLockStore(true, undefined, 'lock:')) },
      'Locks on a store of the app\'s own, an own store (prefix "lock:")',
    ],
    ['the default Redis', {}, 'Locks on Redis at 127.0.0.1:6379 (prefix "lock:")'],
    [
      'a Redis URL with a user, a password and a database',
      { redis: `redis://app:${SECRET}@cache.internal:6380/2`, keyPrefix: 'billing:' },
      'Locks on Redis at cache.internal:6380 db 2 (prefix "billing:")',
    ],
    [
      'Redis options with a password',
      { redis: { host: '10.0.0.5', port: 6390, password: SECRET } },
      'Locks on Redis at 10.0.0.5:6390 (prefix "lock:")',
    ],
    [
      'a Sentinel-managed master',
      {
        redis: {
          sentinels: [{ host: 's1', port: 26379 }, { host: 's2' }],
          name: 'mymaster',
          password: SECRET,
          sentinelPassword: SECRET,
        },
      },
      'Locks on Redis master "mymaster" via sentinels s1:26379,s2:26379 (prefix "lock:")',
    ],
    [
      'a Cluster',
      {
        redis: {
          cluster: [
            `redis://:${SECRET}@n1:7000`,
            { host: 'n2', port: 7001 },
            7002,
            `u:${SECRET}@n3:7003`,
          ],
          clusterOptions: { redisOptions: { password: SECRET } },
        },
      },
      'Locks on a Redis Cluster with seed nodes n1:7000,n2:7001,127.0.0.1:7002,n3:7003 (prefix "lock:")',
    ],
    [
      'RedLock',
      {
        redis: [
          `redis://:${SECRET}@m1:6379`,
          { host: 'm2', port: 6380, password: SECRET },
          `rediss://user:${SECRET}@m3:6381`,
        ],
      },
      'Locks on RedLock over 3 Redis masters: m1:6379, m2:6380, m3:6381 (prefix "lock:")',
    ],
    [
      'ZooKeeper',
      { zookeeper: { connectionString: 'zk1:2181,zk2:2182/app', root: '/my-locks' } },
      'Locks on ZooKeeper at zk1:2181,zk2:2182/app (root /my-locks, prefix "lock:")',
    ],
  ])('names %s', (_, options, line) => {
    const described = lineFor(options);
    expect(described).toBe(line);
    expect(described).not.toContain(SECRET);
  });

  it('names the server of a client passed in, without its password', () => {
    const client = new Redis({ host: 'r1', port: 6400, password: SECRET, lazyConnect: true });
    const cluster = new Cluster([{ host: 'c1', port: 7100 }], {
      lazyConnect: true,
      redisOptions: { password: SECRET },
    });
    try {
      expect(lineFor({ redis: client })).toBe('Locks on Redis at r1:6400 (prefix "lock:")');
      expect(lineFor({ redis: cluster })).toBe(
        'Locks on a Redis Cluster with seed nodes c1:7100 (prefix "lock:")',
      );
    } finally {
      client.disconnect();
      cluster.disconnect();
    }
  });

  it('is logged once per module, at log level, by LockModule', async () => {
    const lines: { level: string; message: string; context?: string }[] = [];
    const record =
      (level: string) =>
      (message: unknown, context?: unknown): void => {
        lines.push({ level, message: String(message), context: context as string | undefined });
      };
    const logger: LoggerService = {
      log: record('log'),
      error: record('error'),
      warn: record('warn'),
      debug: record('debug'),
      verbose: record('verbose'),
    };
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: `redis://:${SECRET}@127.0.0.1:1/0` })],
    })
      .setLogger(logger)
      .compile();
    try {
      await module.init();
    } finally {
      await module.close();
      Logger.overrideLogger(new ConsoleLogger());
    }
    const ours = lines.filter(({ message }) => message.startsWith('Locks '));
    expect(ours).toEqual([
      {
        level: 'log',
        message: 'Locks on Redis at 127.0.0.1:1 (prefix "lock:")',
        context: 'LockModule',
      },
    ]);
    expect(lines.map(({ message }) => message).join('\n')).not.toContain(SECRET);
  });
});
