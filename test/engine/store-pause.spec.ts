import type { Lock } from '../../src/index.js';
import { aborted, bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';

/**
 * Redis stops answering for longer than the TTL (SIGSTOP: a stall, a long fork, a paused VM)
 * while callers wait. The holder's lock lapses meanwhile, and the waiters' re-checks are applied
 * when Redis resumes and answered after their validity: such a late grant proves nothing, but
 * it is no verdict either. Each waiter stays in its place until its own waitTimeout.
 */
describe('Redis paused past the TTL while callers wait', () => {
  let server: RedisServer;
  let apps: LockApp[];

  beforeEach(async () => {
    server = await RedisServer.start();
    apps = await Promise.all(
      [0, 1, 2].map(() => bootLockApp({ redis: server.url, ttl: 500, waitTimeout: 12_000 })),
    );
  });

  afterEach(async () => {
    if (server.pid !== undefined) process.kill(server.pid, 'SIGCONT');
    await Promise.all(apps.map((app) => app.close()));
    await server.stop();
  });

  it('lets the waiters take the lock in their order once it answers again', async () => {
    const [holderApp, firstApp, secondApp] = apps;
    const holder = await holderApp.locks.acquire('k');
    const order: string[] = [];
    const waitFor = (app: LockApp, name: string) =>
      app.locks.acquire('k').then((lock: Lock) => {
        order.push(name);
        return lock;
      });
    const first = waitFor(firstApp, 'first');
    await sleep(50);
    const second = waitFor(secondApp, 'second');
    await sleep(50);

    process.kill(server.pid as number, 'SIGSTOP');
    // The holder's renewals and the waiters' re-checks go unanswered past the 500 ms TTL.
    await sleep(2_000);
    process.kill(server.pid as number, 'SIGCONT');

    // The holder learns its lock is gone; the first waiter gets it, and nobody fails.
    await aborted(holder);
    const firstLock = await first;
    expect(order).toEqual(['first']);
    expect(firstLock.signal.aborted).toBe(false);
    expect(await firstLock.release()).toBe(true);
    const secondLock = await second;
    expect(order).toEqual(['first', 'second']);
    expect(secondLock.fencingToken).toBeGreaterThan(firstLock.fencingToken);
    expect(await secondLock.release()).toBe(true);
  });

  it('lets a caller whose first attempt is answered late wait for the lock instead of failing', async () => {
    const [callerApp] = apps;
    process.kill(server.pid as number, 'SIGSTOP');
    const lock = callerApp.locks.acquire('fresh');
    await sleep(1_000);
    process.kill(server.pid as number, 'SIGCONT');
    const held = await lock;
    expect(held.signal.aborted).toBe(false);
    expect(await callerApp.locks.isLocked('fresh')).toBe(true);
    expect(await held.release()).toBe(true);
  });
});
