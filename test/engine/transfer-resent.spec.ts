import type { Redis } from 'ioredis';
import { until } from '../support/backends.js';
import { bootLockApp, rawClient, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { holderIn } from '../support/lock-value.js';

/**
 * An adoption whose transfer reaches Redis and is applied, but whose answer is lost with the
 * connection: ioredis sends the unanswered command again once it reconnects
 * (`autoResendUnfulfilledCommands`, on by default), and the transfer sent again finds the hold
 * on the adopter's new token already. That is the move done: the adoption holds the lock. (It
 * once answered `gone`, and the moved hold was left to nobody until the handle's ttl ended.)
 */
describe('an adoption whose answer is lost with the connection', () => {
  let server: RedisServer;
  let proxy: TcpProxy;
  let worker: LockApp;
  let scheduler: LockApp;
  let redis: Redis;

  beforeEach(async () => {
    server = await RedisServer.start();
    proxy = await TcpProxy.start(server.port);
    // A generous commandTimeout: the reconnection and the resent command fit well inside it.
    worker = await bootLockApp({ redis: proxy.url, commandTimeout: 5_000, instanceId: 'worker' });
    scheduler = await bootLockApp({ redis: server.url, instanceId: 'scheduler' });
    redis = rawClient(server.url);
    await until(
      () =>
        worker.locks.isLocked('warm-up').then(
          () => true,
          () => false,
        ),
      10_000,
    );
  });

  afterEach(async () => {
    proxy.resume();
    await Promise.all([worker.close(), scheduler.close()]);
    await redis.quit();
    await proxy.stop();
    await server.stop();
  });

  it('holds the lock: the transfer sent again on the new connection answers the move done', async () => {
    const lock = await scheduler.locks.acquire('job', { ttl: 30_000 });
    const handle = await lock.handOff();
    // Redis applies what the worker sends; its answers are held, then thrown away with the
    // connection once the transfer has landed.
    proxy.holdAnswers();
    const adoption = worker.locks.adopt(handle).then(
      (adopted) => ({ adopted }),
      (error: unknown) => ({ error }),
    );
    await until(async () => {
      const holder = holderIn(await redis.get(lock.key));
      return holder !== null && holder !== handle.token;
    }, 5_000);
    const movedTo = holderIn(await redis.get(lock.key));
    proxy.cut();
    const outcome = await adoption;
    const adopted = 'adopted' in outcome ? outcome.adopted : undefined;
    expect({
      token: adopted?.token,
      error: 'error' in outcome ? outcome.error : undefined,
    }).toEqual({ token: movedTo, error: undefined });
    expect(await adopted?.release()).toBe(true);
    expect(await scheduler.locks.isLocked('job')).toBe(false);
  });
});
