import type { Redis } from 'ioredis';
import { LockConnectionError, LockLostError } from '../../src/index.js';
import { until } from '../support/backends.js';
import { aborted, bootLockApp, rawClient, sleep, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { holderIn } from '../support/lock-value.js';

describe('latency on the path to Redis', () => {
  let server: RedisServer;
  let proxy: TcpProxy;
  let app: LockApp;
  let direct: LockApp;
  let redis: Redis;

  beforeEach(async () => {
    server = await RedisServer.start();
    proxy = await TcpProxy.start(server.port);
    app = await bootLockApp({ redis: proxy.url, commandTimeout: 300 });
    direct = await bootLockApp({ redis: server.url });
    redis = rawClient(server.url);
  });

  /**
   * Waits until the app's connection is open and answers. Its first command opens it (through
   * the proxy, with the client's ready check): on a loaded machine that alone can outlast the
   * 300 ms commandTimeout, which is meant for the stalls the tests make, not for that.
   */
  const connected = () =>
    until(
      async () =>
        app.locks.isLocked('warm-up').then(
          () => true,
          () => false,
        ),
      10_000,
    );

  afterEach(async () => {
    proxy.resume();
    await Promise.all([app.close(), direct.close()]);
    await redis.quit();
    await proxy.stop();
    await server.stop();
  });

  it('times an acquire out cleanly and frees the lock it took once the reply comes in', async () => {
    await connected();
    proxy.stall();
    // It gives up on its commandTimeout with a connection error, not after the 10 s wait.
    await expect(app.locks.acquire('slow', { waitTimeout: 10_000 })).rejects.toBeInstanceOf(
      LockConnectionError,
    );
    proxy.resume();
    // The stalled acquire reaches Redis after all, and takes the lock (30 s TTL). The library
    // must hand it back as soon as the late reply arrives, not leave it until it expires.
    let lock = await direct.locks.tryAcquire('slow');
    for (let i = 0; i < 100 && !lock; i++) {
      await sleep(20);
      lock = await direct.locks.tryAcquire('slow');
    }
    expect(lock).not.toBeNull();
    await lock!.release();
    // Nor may it keep a place in the queue, where the lock would be handed to nobody.
    for (let i = 0; i < 100 && (await redis.exists('{lock:slow}:queue')) === 1; i++)
      await sleep(20);
    expect(await redis.exists('{lock:slow}:queue')).toBe(0);
  });

  it('gives back the hold that an adoption moved once its answer, which never came in time, reaches Redis', async () => {
    await connected();
    const lock = await direct.locks.acquire('adopted-late', { ttl: 30_000 });
    const handle = await lock.handOff();
    proxy.stall();
    await expect(app.locks.adopt(handle)).rejects.toBeInstanceOf(LockConnectionError);
    proxy.resume();
    // The stalled adoption reaches Redis after all and moves the hold to the adopter's token
    // (30 s TTL), which nobody holds: the library must give it back, not leave it to expire.
    let next = await direct.locks.tryAcquire('adopted-late');
    for (let i = 0; i < 100 && !next; i++) {
      await sleep(20);
      next = await direct.locks.tryAcquire('adopted-late');
    }
    expect(next).not.toBeNull();
    await expect(app.locks.adopt(handle)).rejects.toBeInstanceOf(LockLostError);
    await next!.release();
  });

  it('treats renewals that come too late as loss, and the lock goes to the next holder', async () => {
    const lock = await app.locks.acquire('renewed', { ttl: 300 });
    proxy.stall();
    const reason = await aborted(lock);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toMatch(/validity ran out/);
    // Another process, not behind the stalled path, gets the lock once its TTL has run out.
    const next = await direct.locks.acquire('renewed', { waitTimeout: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    proxy.resume();
    await next.release();
  });

  it("keeps a throttle's window when its renewals go unanswered and the holder stops counting on it", async () => {
    await connected();
    const lock = await app.locks.acquire('window', { ttl: 600, holdFor: 20_000 });
    // The renewals reach Redis, their answers do not: the holder loses the lock by its clock
    // while Redis still holds it for it. Freeing it then may not end the window early.
    proxy.holdAnswers();
    expect(await aborted(lock)).toBeInstanceOf(LockLostError);
    const reachedRedis = async () => (await redis.pttl(lock.key)) > 2_000;
    await until(reachedRedis, 5_000);
    expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    const early = await direct.locks.tryAcquire('window').catch((error: unknown) => error);
    expect(early).toBeNull();
    proxy.cut();
  });

  it('fails an acquisition whose answer comes after its TTL instead of handing out a stale lock', async () => {
    await connected();
    // 60 ms each way: Redis grants a 50 ms lock, which has expired by the time the answer is in.
    proxy.delay(60);
    const error = await app.locks
      .acquire('late', { ttl: 50, waitTimeout: 500 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConnectionError);
    expect((error as Error).message).toMatch(/validity \(ttl 50 ms\) ran out/);
    proxy.delay(0);
    expect(await direct.locks.tryAcquire('late')).not.toBeNull();
  });

  it('counts an extend whose answer never came as applied: the holder is told the lock is lost when the shorter TTL it asked for ends', async () => {
    const lock = await app.locks.acquire('shortened', { ttl: 30_000, watchdog: false });
    // Redis gets the extend and applies it; its answer never reaches the holder.
    proxy.holdAnswers();
    await expect(lock.extend(1_000)).rejects.toBeInstanceOf(LockConnectionError);
    const pttl = await redis.pttl(lock.key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(1_000);
    // The key is gone within a second; the holder may not count on its old 30 s meanwhile.
    const told = await Promise.race([aborted(lock), sleep(10_000).then(() => 'still held')]);
    expect(told).toBeInstanceOf(LockLostError);
    proxy.cut();
  });

  it('counts a release whose answer never came as applied: the holder no longer counts on the lock, which another may take', async () => {
    const lock = await app.locks.acquire('released-unanswered', { ttl: 30_000 });
    proxy.holdAnswers();
    await expect(lock.release()).rejects.toBeInstanceOf(LockConnectionError);
    // Redis applied it: the key is free for anybody...
    const next = await direct.locks.tryAcquire('released-unanswered');
    expect(next).not.toBeNull();
    // ...so the old holder is told it lost the lock, not left believing it holds it.
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(await lock.release()).toBe(false);
    proxy.cut();
    expect(await next!.release()).toBe(true);
  });

  it('resolves using() with what its work returned when the release then gets no answer: the work ran under the lock', async () => {
    let signal: AbortSignal | undefined;
    const done = app.locks.using(
      'work-done',
      (lock) => {
        signal = lock?.signal;
        // From here the answers are lost: the release after the work gets none.
        proxy.holdAnswers();
        return 'done';
      },
      { ttl: 30_000 },
    );
    await expect(done).resolves.toBe('done');
    expect(signal?.aborted).toBe(true);
    proxy.cut();
  });

  it('keeps a lock through a slow path as long as renewals arrive in time', async () => {
    proxy.delay(20);
    const lock = await app.locks.acquire('slow-but-fine', { ttl: 600 });
    await sleep(1_500);
    expect(lock.signal.aborted).toBe(false);
    expect(holderIn(await redis.get(lock.key))).toBe(lock.token);
    expect(await lock.release()).toBe(true);
  });
});
