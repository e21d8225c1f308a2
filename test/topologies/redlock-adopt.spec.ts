import { Redis } from 'ioredis';
import { LockLostError, type Lock } from '../../src/index.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { bootLockApp, sleep, type LockApp } from '../support/lock-app.js';
import { holderIn } from '../support/lock-value.js';

const TTL = 1_000;

/**
 * Adoption on RedLock under faults: a master restarted empty between the hand-off and the
 * adoption, with an intruder and a second adopter racing; the adopter's transfers applied on
 * every master with their answers lost and resent by ioredis; and a late answer to the handing
 * process's last renewal, which must not put the handed-off token back on a master.
 */
describe('adoption on RedLock (3 masters)', () => {
  let masters: RedisServer[];
  const apps: LockApp[] = [];
  const proxies: TcpProxy[] = [];

  const boot = async (
    instanceId: string,
    urls = masters.map((m) => m.url),
    nodeTimeout = 250,
    ttl = TTL,
  ) => {
    const app = await bootLockApp({ redis: urls, nodeTimeout, ttl, instanceId });
    apps.push(app);
    return app;
  };
  const holders = (key: string) =>
    Promise.all(
      masters.map(async (master) => {
        const client = new Redis(master.url);
        try {
          return holderIn(await client.get(key));
        } finally {
          client.disconnect();
        }
      }),
    );

  beforeEach(async () => {
    masters = await Promise.all([1, 2, 3].map(() => RedisServer.start()));
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
    await Promise.all(masters.map((master) => master.stop()));
  });

  it('a master restarted empty between hand-off and adoption, an intruder and two adopters racing: one holder, same fencing token, later tokens greater', async () => {
    const scheduler = await boot('scheduler');
    const worker = await boot('worker');
    const intruder = await boot('intruder');
    for (const app of apps) await (await app.locks.acquire('warm')).release();
    const lock = await scheduler.locks.acquire('job');
    const handle = await lock.handOff();
    await masters[2].restart();
    // The intruder gets the empty master only: refused, and its grant there withdrawn.
    expect(await intruder.locks.tryAcquire('job')).toBeNull();
    const results = await Promise.allSettled([
      worker.locks.adopt(handle),
      intruder.locks.adopt(handle),
    ]);
    const adopted = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(adopted).toHaveLength(1);
    const winner: Lock = adopted[0];
    expect(winner.fencingToken).toBe(lock.fencingToken);
    const refused = results.find((r) => r.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(LockLostError);
    // Renewals put the winner back on the restarted master; nobody else gets in meanwhile.
    for (let i = 0; i < 6; i++) {
      expect(await intruder.locks.tryAcquire('job')).toBeNull();
      expect(await scheduler.locks.tryAcquire('job')).toBeNull();
      await sleep(TTL / 2);
    }
    expect(winner.signal.aborted).toBe(false);
    expect(await holders(winner.key)).toEqual([winner.token, winner.token, winner.token]);
    expect(await winner.release()).toBe(true);
    const next = await intruder.locks.acquire('job', { waitTimeout: 2_000 });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it('the adoption fails with one master restarted empty and one down: nothing holds for nobody, and the next holder’s token is greater', async () => {
    const scheduler = await boot('scheduler');
    const worker = await boot('worker');
    for (const app of apps) await (await app.locks.acquire('warm')).release();
    const lock = await scheduler.locks.acquire('job', { ttl: 30_000 });
    const handle = await lock.handOff();
    await masters[2].restart();
    await masters[0].kill();
    const error = await worker.locks.adopt(handle).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    // The move on master 2 is withdrawn: master 2 and the empty master 3 make a majority.
    // (The worker's connection to the restarted master comes back first.)
    let next: Lock | null = null;
    const tries: string[] = [];
    for (let i = 0; i < 50 && !next; i++) {
      next = await worker.locks.tryAcquire('job').catch((e: unknown) => {
        tries.push(String(e));
        return null;
      });
      if (!next) await sleep(100);
    }
    if (!next) {
      const live = masters.slice(1).map(async (master) => {
        const client = new Redis(master.url);
        try {
          return [await client.get(lock.key), await client.pttl(lock.key)];
        } finally {
          client.disconnect();
        }
      });
      throw new Error(
        `the lock was not free after the failed adoption (${String(error)}): masters 2, 3 ` +
          `${JSON.stringify(await Promise.all(live))}, handle ${handle.token}; ` +
          `tries: ${tries.length} ${tries.slice(-2).join(' | ')}`,
      );
    }
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await expect(scheduler.locks.adopt(handle)).rejects.toBeInstanceOf(Error);
    expect(await next.release()).toBe(true);
  });

  it('the adopter’s transfers are applied on every master, their answers lost and resent by ioredis: the hold is withdrawn, not left to nobody', async () => {
    const scheduler = await boot('scheduler');
    for (const master of masters) proxies.push(await TcpProxy.start(master.port));
    const worker = await boot(
      'worker',
      proxies.map((p) => p.url),
      5_000,
      30_000,
    );
    for (const app of apps) await (await app.locks.acquire('warm')).release();
    const lock = await scheduler.locks.acquire('job', { ttl: 30_000 });
    const handle = await lock.handOff();
    for (const proxy of proxies) proxy.holdAnswers();
    const adoption = worker.locks.adopt(handle).catch((e: unknown) => e);
    for (let i = 0; i < 100; i++) {
      const tokens = await holders(lock.key);
      if (tokens.every((t) => t !== null && t !== handle.token)) break;
      await sleep(20);
    }
    for (const proxy of proxies) proxy.cut();
    const outcome = await adoption;
    if (!(outcome instanceof Error)) {
      await (outcome as Lock).release();
      return;
    }
    let next = await scheduler.locks.tryAcquire('job');
    for (let i = 0; i < 100 && !next; i++) {
      await sleep(20);
      next = await scheduler.locks.tryAcquire('job');
    }
    expect({ reacquired: next !== null, holders: next ? [] : await holders(lock.key) }).toEqual({
      reacquired: true,
      holders: [],
    });
    await next?.release();
  });

  it('puts the handed-off token back on no master when the handing process’s last renewal is answered late there, after the adopter released', async () => {
    // The scheduler reaches master 3 through a proxy the test stalls; its per-master timeout is
    // long, so that master 3's late answer still counts for the renewal's repair.
    const proxy = await TcpProxy.start(masters[2].port);
    proxies.push(proxy);
    const scheduler = await boot(
      'scheduler',
      [masters[0].url, masters[1].url, proxy.url],
      5_000,
      30_000,
    );
    const worker = await boot('worker');
    for (const app of apps) await (await app.locks.acquire('warm')).release();
    const lock = await scheduler.locks.acquire('job', { ttl: 30_000 });
    // The acquisition's fencing floor reaches master 3 too (decided by two, it may lag).
    await sleep(300);
    proxy.stall();
    // handOff's renewal is decided by masters 1 and 2; master 3's waits in the proxy.
    const handle = await lock.handOff();
    const adopted = await worker.locks.adopt(handle);
    const settle = async (expected: (string | null)[]) => {
      for (let i = 0; i < 100; i++) {
        if (JSON.stringify(await holders(lock.key)) === JSON.stringify(expected)) return;
        await sleep(20);
      }
      expect(await holders(lock.key)).toEqual(expected);
    };
    // (Decided by a majority; the third master's move may come a moment later.)
    await settle([adopted.token, adopted.token, adopted.token]);
    expect(await adopted.release()).toBe(true);
    await settle([null, null, null]);
    // Master 3 now gets the renewal of the handed-off token: gone there, it answers no. The
    // scheduler handed the token off, so its repair must not put it back where the key is free.
    proxy.resume();
    await sleep(1_000);
    const after = await holders(lock.key);
    // Were it back, with master 1 down nobody could take the lock until the handle's ttl ends.
    await masters[0].kill();
    const next = await worker.locks.tryAcquire('job').catch((e: unknown) => String(e));
    expect({ holders: after, nextAcquired: next !== null && typeof next !== 'string' }).toEqual({
      holders: [null, null, null],
      nextAcquired: true,
    });
  });
});
