import { fork } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockNotAcquiredError,
  LockOptionsError,
  LockService,
  WithLock,
  type LockModuleOptions,
} from '../../src/index.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { bootLockApp, sharedRedisUrl, sleep, type LockApp } from '../support/lock-app.js';
import { expectOptionError } from '../support/option-error.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

const ZOOKEEPER_PROCESS = fileURLToPath(
  new URL('../support/zookeeper-process.mjs', import.meta.url),
);
const HIDE_CLIENT = fileURLToPath(new URL('../support/hide-zookeeper-client.mjs', import.meta.url));

describe('ZooKeeper module options', () => {
  it('fills in the session timeout and the ttl from each other', () => {
    expect(resolveModuleOptions({ zookeeper: 'zk1:2181,zk2:2181' })).toMatchObject({
      store: 'zookeeper',
      fair: true,
      ttl: 20_000,
      zookeeper: { connectionString: 'zk1:2181,zk2:2181', sessionTimeout: 30_000, root: '/locks' },
    });
    expect(resolveModuleOptions({ zookeeper: 'zk:2181', ttl: 6_000 })).toMatchObject({
      ttl: 6_000,
      zookeeper: { sessionTimeout: 9_000 },
    });
    expect(
      resolveModuleOptions({
        zookeeper: { connectionString: 'zk:2181/app', sessionTimeout: 3_000, root: '/a/b.c' },
      }),
    ).toMatchObject({ ttl: 2_000, zookeeper: { root: '/a/b.c' } });
  });

  it.each<[string, LockModuleOptions, string, string]>([
    ['fair: false', { zookeeper: 'zk:2181', fair: false }, 'fair', 'always serve waiters in order'],
    ['watchdog: false', { zookeeper: 'zk:2181', watchdog: false }, 'watchdog', 'the session'],
    ['redis beside it', { zookeeper: 'zk:2181', redis: 'redis://x' }, 'redis', 'with zookeeper'],
    ['store beside it', { zookeeper: 'zk:2181', store: 'memory' }, 'store', 'with zookeeper'],
    [
      'waitForReplicas',
      { zookeeper: 'zk:2181', waitForReplicas: { replicas: 1, timeout: 10 } },
      'waitForReplicas',
      'quorum',
    ],
    ['nodeTimeout', { zookeeper: 'zk:2181', nodeTimeout: 10 }, 'nodeTimeout', 'RedLock'],
    ['an empty connection string', { zookeeper: '' }, 'zookeeper', 'host:port'],
    [
      'a connection string with spaces',
      { zookeeper: { connectionString: 'zk 1:2181' } },
      'zookeeper.connectionString',
      'host:port',
    ],
    [
      'a relative root',
      { zookeeper: { connectionString: 'zk:1', root: 'locks' } },
      'zookeeper.root',
      'absolute',
    ],
    [
      'a root with ".."',
      { zookeeper: { connectionString: 'zk:1', root: '/a/..' } },
      'zookeeper.root',
      'absolute',
    ],
    [
      'a root ending in "/"',
      { zookeeper: { connectionString: 'zk:1', root: '/a/' } },
      'zookeeper.root',
      'absolute',
    ],
    [
      'a ttl beyond two thirds of the session',
      { zookeeper: { connectionString: 'zk:1', sessionTimeout: 3_000 }, ttl: 2_001 },
      'ttl',
      'at most 2000 ms',
    ],
    [
      'an unknown option',
      { zookeeper: { connectionString: 'zk:1', chroot: '/x' } as never },
      'chroot',
      'no such option',
    ],
  ])('refuses %s at boot', (_, options, option, expected) => {
    expectOptionError(() => resolveModuleOptions(options), option, expected);
  });
});

describe('ZooKeeper backend: what it refuses at the call, the decorator, the client package', () => {
  const root = `/options-${randomBytes(4).toString('hex')}`;
  let server: ZooKeeperServer;
  let app: LockApp;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    app = await bootLockApp({
      zookeeper: { connectionString: server.address, sessionTimeout: 3_000, root },
    });
  });

  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  it('refuses holdFor beside limit, watchdog: false and a ttl the session cannot vouch for, naming the option', async () => {
    await expect(app.locks.acquire('k', { holdFor: 1_000, limit: 2 })).rejects.toMatchObject({
      option: 'holdFor',
    });
    await expect(app.locks.tryAcquire('k', { watchdog: false })).rejects.toMatchObject({
      option: 'watchdog',
    });
    await expect(app.locks.acquire('k', { ttl: 2_001 })).rejects.toMatchObject({
      option: 'ttl',
      message: expect.stringContaining('two thirds of the session timeout (3000 ms)') as unknown,
    });
    await expect(app.locks.acquire('k', { ttl: 2_001 })).rejects.toBeInstanceOf(LockOptionsError);
    const lock = await app.locks.acquire('k', { ttl: 1_000 });
    await expect(lock.extend(2_500)).rejects.toMatchObject({ option: 'ttl' });
    await lock.release();
  });

  it('keeps a lock held past its ttl while the session lives (the watchdog confirms the session)', async () => {
    const lock = await app.locks.acquire('renewed', { ttl: 300 });
    await sleep(1_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await app.locks.isLocked('renewed')).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it('runs @WithLock methods under ZooKeeper locks', async () => {
    @Injectable()
    class Reports {
      running = 0;
      overlaps = 0;
      @WithLock('report:<id>')
      async build(id: string): Promise<string> {
        if (++this.running > 1) this.overlaps++;
        await sleep(200);
        this.running--;
        return `${id}:${this.locks.current()?.key}`;
      }
      constructor(readonly locks: LockService) {}
    }
    @Module({
      imports: [
        LockModule.forRoot({
          zookeeper: { connectionString: server.address, sessionTimeout: 3_000, root },
        }),
      ],
      providers: [Reports],
    })
    class ReportsModule {}
    const module = await Test.createTestingModule({ imports: [ReportsModule] }).compile();
    await module.init();
    try {
      const reports = module.get(Reports);
      const results = await Promise.allSettled([reports.build('1'), reports.build('1')]);
      expect(results.filter((r) => r.status === 'fulfilled')).toEqual([
        { status: 'fulfilled', value: '1:lock:report:1' },
      ]);
      const rejected = results.find((r) => r.status === 'rejected');
      expect(rejected?.reason).toBeInstanceOf(LockNotAcquiredError);
      expect(reports.overlaps).toBe(0);
    } finally {
      await module.close();
    }
  });

  it('fails the boot when a @WithLock method asks for holdFor on a read-write lock', async () => {
    @Injectable()
    class Throttled {
      @WithLock('t:<id>', { holdFor: 1_000, mode: 'read' })
      run(id: string): string {
        return id;
      }
    }
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ zookeeper: { connectionString: server.address, root } })],
      providers: [Throttled],
    }).compile();
    await expect(module.init()).rejects.toMatchObject({
      option: 'holdFor',
      message: expect.stringContaining('Throttled.run') as unknown,
    });
    await module.close();
  });

  it('without node-zookeeper-client installed, the zookeeper option fails the boot saying what to install, and Redis needs nothing', async () => {
    const boot = async (env: Record<string, string>) => {
      const child = fork(ZOOKEEPER_PROCESS, ['boot'], {
        execArgv: ['--import', HIDE_CLIENT],
        stdio: 'inherit',
        env: { ...process.env, ZK_ROOT: root, ...env },
      });
      const [message] = (await once(child, 'message')) as [{ booted?: true; error?: string }];
      await once(child, 'exit');
      return message;
    };
    const zookeeper = await boot({ ZK_CONNECT: server.address });
    expect(zookeeper.error).toMatch(
      /^LockOptionsError: .*"zookeeper".*npm install node-zookeeper-client/,
    );
    expect(await boot({ ZK_REDIS_URL: sharedRedisUrl() })).toEqual({ booted: true });
  });

  it('leaves nothing in the tree', async () => {
    const tree = await ZooKeeperTree.connect(server.address);
    expect(await tree.below(root)).toEqual([]);
    tree.close();
  });
});
