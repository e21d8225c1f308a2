import { ConsoleLogger, Logger } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockModule, LockService, type LockModuleOptions } from '../../src/index.js';
import { until } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';
import { freePort, RedisServer } from '../support/redis-server.js';
import { recordingLogger } from '../support/log-lines.js';

/** Every line the app logs, with its level. */
const { lines, logger } = recordingLogger();
const said = (level: string, about: RegExp) =>
  lines.filter((line) => line.level === level && about.test(line.message));

async function boot(options: LockModuleOptions): Promise<TestingModule> {
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot(options)] })
    .setLogger(logger)
    .compile();
  await module.init();
  return module;
}

/**
 * What the log says while the store is down: one line at once, none for each of the client's
 * reconnect attempts (a few a second), and one when the store is back: for a client the
 * module made and for one the app passed in.
 */
describe('the log of a Redis outage', () => {
  beforeEach(() => {
    lines.length = 0;
  });

  afterAll(() => {
    Logger.overrideLogger(new ConsoleLogger());
  });

  it('boots with the store down, and says so in one line from its first call on', async () => {
    const module = await boot({
      redis: `redis://127.0.0.1:${await freePort()}`,
      commandTimeout: 1_000,
    });
    try {
      // The client connects on its first command (a failed boot opens nothing).
      const locks = module.get(LockService);
      await expect(locks.tryAcquire('k')).rejects.toMatchObject({ name: 'LockConnectionError' });
      await until(async () => said('warn', /^Redis connection error: /).length > 0, 10_000);
      // The client retries every few hundred ms meanwhile; now known down, a call fails at once.
      await sleep(2_000);
      await expect(locks.tryAcquire('k')).rejects.toMatchObject({ name: 'LockConnectionError' });
      expect(said('warn', /^Redis connection error: /)).toHaveLength(1);
    } finally {
      await module.close();
    }
  });

  it.each([
    ['a client it made', false],
    ['a client the app passed in', true],
  ])('says once that %s lost the store, and once that it is back', async (_, passed) => {
    const server = await RedisServer.start();
    const client = passed ? new Redis(server.url) : undefined;
    const module = await boot({ redis: client ?? server.url, keyPrefix: uniquePrefix() });
    try {
      const locks = module.get(LockService);
      await (await locks.acquire('k')).release();
      await server.kill();
      await until(async () => said('warn', /^Redis connection error: /).length > 0, 10_000);
      await sleep(2_000);
      expect(said('warn', /^Redis connection error: /)).toHaveLength(1);
      await server.restart();
      await until(async () => said('log', /^Redis reachable again after /).length > 0, 10_000);
      expect(
        said('log', /^Redis reachable again after [\d.]+ s \(\d+ connection failures?\)$/),
      ).toHaveLength(1);
      await (await locks.acquire('k')).release();
    } finally {
      await module.close();
      client?.disconnect();
      await server.stop();
    }
  });
});
