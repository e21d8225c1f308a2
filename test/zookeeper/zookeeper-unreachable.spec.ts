import { randomBytes } from 'node:crypto';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  LockConnectionError,
  LockModule,
  LockService,
  type LockModuleOptions,
} from '../../src/index.js';
import { freePort } from '../support/redis-server.js';
import { sleep } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { recordingLogger } from '../support/log-lines.js';

/** Every line the app logs, with its level. */
const { lines, logger } = recordingLogger();
const warnings = (about: string) =>
  lines.filter(({ level, message }) => level === 'warn' && message.startsWith(about));

/** Waits, boundedly, for a warning that begins with `about`. */
async function warned(about: string): Promise<string[]> {
  for (let i = 0; i < 100 && warnings(about).length === 0; i++) await sleep(50);
  return warnings(about).map(({ message }) => message);
}

async function boot(options: LockModuleOptions): Promise<TestingModule> {
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot(options)] })
    .setLogger(logger)
    .compile();
  await module.init();
  return module;
}

/**
 * A ZooKeeper that cannot be reached is not silent: as with Redis, the app boots (its session
 * starts connecting once it has booted, and nothing waits for it) and the log says that the
 * backend cannot be reached, naming where it was looked for, while the client goes on trying.
 */
describe('ZooKeeper that cannot be reached', () => {
  beforeEach(() => {
    lines.length = 0;
  });

  afterAll(() => {
    Logger.overrideLogger(new ConsoleLogger());
  });

  it('boots, names the ensemble at boot, and warns as Redis does, once, with no lock asked for', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const module = await boot({ zookeeper: address, commandTimeout: 300 });
    try {
      expect(lines.filter(({ level }) => level === 'log').map(({ message }) => message)).toContain(
        `Locks on ZooKeeper at ${address} (root /locks, prefix "lock:")`,
      );
      const [warning] = await warned('ZooKeeper connection error: ');
      expect(warning).toBe(
        `ZooKeeper connection error: no connection to ${address} for 300 ms; still trying`,
      );
      const error = await module
        .get(LockService)
        .acquire('order:1', { waitTimeout: 0 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockConnectionError);
      expect(error).toMatchObject({ key: 'order:1', cause: { name: 'TimeoutError' } });
      // More periods of 300 ms went by meanwhile: the next line waits for the next 30 s.
      expect(warnings('ZooKeeper connection error')).toHaveLength(1);
    } finally {
      await module.close();
    }
  });

  it('is warned of in the shape of the Redis warning', async () => {
    const module = await boot({
      redis: `redis://127.0.0.1:${await freePort()}`,
      commandTimeout: 300,
    });
    try {
      const attempt = module
        .get(LockService)
        .tryAcquire('x')
        .catch(() => undefined);
      expect(await warned('Redis connection error: ')).not.toEqual([]);
      await attempt;
    } finally {
      await module.close();
    }
  });

  it('connects again when the server takes the first connection and never answers its handshake', async () => {
    // A server still starting after a restart can accept a connection and never read it; the
    // ZooKeeper client library would wait for the answer forever.
    const server = await ZooKeeperServer.start();
    const proxy = await TcpProxy.start(server.port);
    proxy.stall((connection) => connection === 1);
    const root = `/reach-${randomBytes(4).toString('hex')}`;
    const module = await boot({
      zookeeper: { connectionString: `127.0.0.1:${proxy.port}`, root, sessionTimeout: 3000 },
      commandTimeout: 20_000,
    });
    try {
      const lock = await module.get(LockService).acquire('x');
      expect(await lock.release()).toBe(true);
    } finally {
      await module.close();
      await proxy.stop();
      await server.stop();
    }
  });

  it('is not warned of when ZooKeeper answers', async () => {
    const server = await ZooKeeperServer.start();
    const root = `/reach-${randomBytes(4).toString('hex')}`;
    const module = await boot({
      zookeeper: { connectionString: server.address, root },
      commandTimeout: 300,
    });
    try {
      const lock = await module.get(LockService).acquire('x');
      await lock.release();
      await sleep(600);
      expect(warnings('ZooKeeper connection error')).toEqual([]);
    } finally {
      await module.close();
      await server.stop();
    }
  });
});
