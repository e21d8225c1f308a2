import type { Redis } from 'ioredis';
import { LockConnectionError, type Lock } from '../../src/index.js';
import { bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { holderIn } from '../support/lock-value.js';

/**
 * A caller already in line whose re-checks cannot reach Redis for a while (a failover, a
 * restart, a slow network) waits on in its place; the attempts that timed out may still be
 * applied, and what they took is the caller's own.
 */
describe('a waiter whose re-checks cannot reach Redis', () => {
  let server: RedisServer;
  let proxy: TcpProxy;
  /** Its commands go through the proxy, with a short commandTimeout. */
  let cut: LockApp;
  let holderApp: LockApp;
  let behindApp: LockApp;
  let redis: Redis;

  beforeEach(async () => {
    server = await RedisServer.start();
    proxy = await TcpProxy.start(server.port);
    cut = await bootLockApp({ redis: proxy.url, commandTimeout: 100 });
    holderApp = await bootLockApp({ redis: server.url });
    behindApp = await bootLockApp({ redis: server.url });
    redis = rawClient(server.url);
  });

  afterEach(async () => {
    proxy.resume();
    await Promise.all([cut.close(), holderApp.close(), behindApp.close()]);
    await redis.quit();
    await proxy.stop();
    await server.stop();
  });

  /** Resolves once `count` callers queue for `key` in Redis. */
  async function queued(key: string, count: number): Promise<void> {
    while ((await redis.zcard(`{lock:${key}}:queue`)) < count) await sleep(5);
  }

  /** Holds the commands of the cut-off app, not its subscription: it still hears its turn. */
  function stallCommands(): void {
    proxy.stall((connection) => !proxy.subscribes(connection));
  }

  it('keeps its place through unanswered re-checks, and an attempt applied late is not given back under it', async () => {
    const holder = await holderApp.locks.acquire('k');
    const waiting = cut.locks.acquire('k', { waitTimeout: 10_000 });
    await queued('k', 1);
    let behindHolds = false;
    const behind = behindApp.locks.acquire('k', { waitTimeout: 10_000 }).then((lock) => {
      behindHolds = true;
      return lock;
    });
    await queued('k', 2);

    stallCommands();
    // The lock is reserved for the cut-off waiter, which hears its turn and tries: the try
    // goes unanswered past its commandTimeout, and the try after it too.
    await holder.release();
    await sleep(350);
    proxy.resume();

    const lock: Lock = await waiting;
    // The first try reached Redis after all: had its late answer made the waiter give back what
    // it took, the lock would now be gone, or the next caller's.
    await cut.locks.isLocked('k');
    expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    expect(behindHolds).toBe(false);
    expect(lock.signal.aborted).toBe(false);

    expect(await lock.release()).toBe(true);
    const next = await behind;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it('fails with the connection error, not as a conflict, when its wait ends while Redis is out of reach, and leaves nothing behind', async () => {
    const holder = await holderApp.locks.acquire('gone');
    const waiting = cut.locks.acquire('gone', { waitTimeout: 1_500 }).catch((e: unknown) => e);
    await queued('gone', 1);
    stallCommands();
    const error = await waiting;
    expect(error).toBeInstanceOf(LockConnectionError);
    expect((error as LockConnectionError).message).toMatch(/no answer from Redis within 100 ms/);

    proxy.resume();
    await holder.release();
    // What its stalled tries took (a place in line, or the lock) is given back.
    const next = await behindApp.locks.acquire('gone', { waitTimeout: 5_000 });
    await next.release();
    while ((await redis.exists('{lock:gone}:queue')) === 1) await sleep(10);
    expect(await redis.exists(next.key)).toBe(0);
  });
});
