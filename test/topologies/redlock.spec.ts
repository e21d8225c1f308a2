import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  LockError,
  LockModule,
  LockLostError,
  LockNotAcquiredError,
  LockOptionsError,
  LockQuorumError,
  WithLock,
  type Lock,
  type LockModuleOptions,
} from '../../src/index.js';
import { RedisServer } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { aborted, bootLockApp, scriptCalls, sleep, type LockApp } from '../support/lock-app.js';
import { holderIn } from '../support/lock-value.js';

/** RedLock over five independent masters, each a redis-server of its own. */
describe('RedLock over 5 masters', () => {
  let masters: RedisServer[];
  let raw: Redis[];
  const apps: LockApp[] = [];

  /**
   * A master's answer may take far longer than usual on a loaded machine (the first script load
   * above all), so the default here is generous; the specs whose locks live a few hundred ms
   * need a bound per master below their ttl.
   */
  const short: LockModuleOptions = { nodeTimeout: 300 };
  const boot = async (options: LockModuleOptions = {}) => {
    const app = await bootLockApp({
      redis: masters.map((master) => master.url),
      nodeTimeout: 1_000,
      ...options,
    });
    apps.push(app);
    return app;
  };
  const address = (master: RedisServer) => `127.0.0.1:${master.port}`;
  /** On which masters the lock's key holds its token (a dead master holds nothing). */
  const holdersOf = async (lock: Lock) =>
    (
      await Promise.all(
        raw.map((client) =>
          client.status === 'ready' ? client.get(lock.key) : Promise.resolve(null),
        ),
      )
    ).map((value) => holderIn(value) === lock.token);
  /**
   * Waits until the lock is on `expected` masters: an operation is decided by a majority, and
   * the requests to the other masters may still be on their way.
   */
  const settlesOn = async (lock: Lock, expected: number) => {
    for (let tries = 0; tries < 100; tries++) {
      if ((await holdersOf(lock)).filter(Boolean).length === expected) return true;
      await sleep(20);
    }
    return false;
  };

  beforeEach(async () => {
    masters = await Promise.all(Array.from({ length: 5 }, () => RedisServer.start()));
    // ioredis keeps a timer for `disconnectTimeout` after closing a connection to a dead server.
    raw = masters.map((master) => new Redis(master.url, { disconnectTimeout: 50 }));
    for (const client of raw) client.on('error', () => undefined);
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    for (const client of raw) client.disconnect();
    await Promise.all(masters.map((master) => master.stop()));
  });

  it('holds a lock on every master, excludes others, and releases it everywhere', async () => {
    const [a, b] = [await boot(), await boot()];
    const lock = await a.locks.acquire('order:1');
    expect((await holdersOf(lock)).filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(await settlesOn(lock, 5)).toBe(true);
    expect(await b.locks.tryAcquire('order:1')).toBeNull();
    expect(await b.locks.isLocked('order:1')).toBe(true);
    expect(await lock.release()).toBe(true);
    expect(await settlesOn(lock, 0)).toBe(true);
    expect(await b.locks.isLocked('order:1')).toBe(false);
  });

  it('keeps a read-modify-write exclusive across processes', async () => {
    // 30 contended calls on 5 masters: a per-master bound that a loaded machine's stall cannot
    // reach, so that what is tested is exclusion, not the scheduler.
    const workers = await Promise.all([1, 2, 3].map(() => boot({ nodeTimeout: 1_000 })));
    let counter = 0;
    await Promise.all(
      workers.flatMap((app) =>
        Array.from({ length: 10 }, () =>
          app.locks.using(
            'counter',
            async () => {
              const read = counter;
              await sleep(1);
              counter = read + 1;
            },
            { waitTimeout: 20_000 },
          ),
        ),
      ),
    );
    expect(counter).toBe(30);
  });

  it('still works with 2 of 5 masters dead', async () => {
    const app = await boot(short);
    await Promise.all([masters[0].kill(), masters[3].kill()]);
    const lock = await app.locks.acquire('survivor', { ttl: 300 });
    expect(await settlesOn(lock, 3)).toBe(true);
    // The watchdog keeps it across several TTLs on the surviving majority.
    await sleep(1_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  });

  it('fails fast with LockQuorumError naming the masters it could not reach when 3 of 5 are dead', async () => {
    const app = await boot();
    const dead = [masters[1], masters[2], masters[4]];
    await Promise.all(dead.map((master) => master.kill()));
    // A wait of a minute would be spent in vain: the error comes from the first attempt.
    const error = await app.locks
      .acquire('doomed', { waitTimeout: 60_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockQuorumError);
    const quorumError = error as LockQuorumError;
    expect(quorumError.quorum).toBe(3);
    expect(quorumError.masters).toBe(5);
    expect(quorumError.unreachable.map(({ master }) => master).sort()).toEqual(
      dead.map(address).sort(),
    );
    for (const master of dead) expect(quorumError.message).toContain(address(master));
    // What the two live masters granted was given back.
    await sleep(100);
    expect(await raw[0].exists(`lock:doomed`)).toBe(0);
    expect(await raw[3].exists(`lock:doomed`)).toBe(0);
  });

  it('aborts the signal when the watchdog can no longer hold a majority', async () => {
    const app = await boot(short);
    const lock = await app.locks.acquire('fragile', { ttl: 300 });
    await Promise.all([masters[0].kill(), masters[1].kill(), masters[2].kill()]);
    const reason = await aborted(lock);
    expect(reason).toBeInstanceOf(LockLostError);
  });

  it('does not let a second client in when masters restart empty while the majority holds', async () => {
    const [a, b] = [await boot(short), await boot(short)];
    const lock = await a.locks.acquire('failover', { ttl: 600 });
    // Two masters crash and come back without the lock (no persistence): what a quorum is for.
    await masters[0].restart();
    await masters[4].restart();
    expect(await b.locks.tryAcquire('failover')).toBeNull();
    // The holder keeps it on the other three through renewals, which also put it back on the
    // two restarted masters...
    await sleep(1_500);
    expect(lock.signal.aborted).toBe(false);
    expect(await settlesOn(lock, 5)).toBe(true);
    // ...so that it survives two more of them restarting empty.
    await masters[1].restart();
    await masters[2].restart();
    expect(await b.locks.tryAcquire('failover')).toBeNull();
    await sleep(1_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
    const next = await b.locks.acquire('failover');
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  describe('with one master 30 ms away', () => {
    let proxy: TcpProxy;
    let far: Redis;

    beforeEach(async () => {
      proxy = await TcpProxy.start(masters[4].port);
      proxy.delay(15);
      far = raw[4];
    });

    afterEach(async () => {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await proxy.stop();
    });

    const bootWithFar = () =>
      boot({ redis: [...masters.slice(0, 4).map((master) => master.url), proxy.url] });

    it('puts a lock back on a master that answers after the majority has decided', async () => {
      const app = await bootWithFar();
      const lock = await app.locks.acquire('late', { ttl: 600 });
      expect(await settlesOn(lock, 5)).toBe(true);
      await far.del(lock.key);
      // The next renewal is decided by the four near masters; the far one's answer comes
      // later, and still gets the lock back.
      expect(await settlesOn(lock, 5)).toBe(true);
      await lock.release();
    });

    it('does not put a lock back once it was released during the renewal', async () => {
      const app = await bootWithFar();
      const lock = await app.locks.acquire('gone', { ttl: 60_000 });
      expect(await settlesOn(lock, 5)).toBe(true);
      await far.del(lock.key);
      const extended = lock.extend();
      expect(await lock.release()).toBe(true);
      await extended.catch(() => undefined);
      await sleep(200);
      expect(await far.exists(lock.key)).toBe(0);
    });
  });

  it('is not held up by a stalled master beyond its per-master timeout', async () => {
    const proxy = await TcpProxy.start(masters[2].port);
    try {
      const urls = masters.map((master) => master.url);
      urls[2] = proxy.url;
      // A per-master timeout longer than the test: the other four decide without the stalled one.
      const app = await boot({ redis: urls, nodeTimeout: 25_000, ttl: 60_000 });
      await app.locks.tryAcquire('warm-up').then((lock) => lock?.release());
      proxy.stall();
      const lock = await app.locks.acquire('slow');
      expect(await lock.release()).toBe(true);

      // Now the stalled master is needed for a majority: its timeout decides, and it is named.
      const strict = await boot({ redis: urls, nodeTimeout: 300 });
      await Promise.all([masters[0].kill(), masters[1].kill()]);
      const error = await strict.locks.acquire('slow').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockQuorumError);
      expect(String(error)).toContain(`127.0.0.1:${proxy.port} (acquire got no answer`);
    } finally {
      await proxy.stop();
    }
  });

  it('resolves split votes between processes that each reach a different master first', async () => {
    const proxies: TcpProxy[] = [];
    try {
      // Three processes over masters 0–2, each 2 ms from "its" master and 20 ms from the
      // others: started together, each gets its own master first and the vote splits.
      const contenders = await Promise.all(
        [0, 1, 2].map(async (near) => {
          const urls = await Promise.all(
            [0, 1, 2].map(async (i) => {
              const proxy = await TcpProxy.start(masters[i].port);
              proxy.delay(i === near ? 2 : 20);
              proxies.push(proxy);
              return proxy.url;
            }),
          );
          // A master's answer counts however late a loaded machine brings it: this spec is
          // about the split, not about slow masters (the spec before it is).
          return boot({ redis: urls, nodeTimeout: 5_000 });
        }),
      );
      const holders: number[] = [];
      await Promise.all(
        contenders.map((app, i) =>
          app.locks.using('split', () => void holders.push(i), { waitTimeout: 20_000 }),
        ),
      );
      expect(holders.sort()).toEqual([0, 1, 2]);
    } finally {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await Promise.all(proxies.map((proxy) => proxy.stop()));
    }
  });

  it('does not hammer the masters while a holder keeps its majority', async () => {
    const [a, b] = [await boot(), await boot()];
    const lock = await a.locks.acquire('busy', { ttl: 60_000 });
    // Two masters lose the lock: a waiter gets them, but never a majority.
    await Promise.all([masters[3].restart(), masters[4].restart()]);
    await sleep(500);
    const monitor = new Redis(masters[3].url);
    const attempts = () => scriptCalls(monitor);
    const before = await attempts();
    await expect(b.locks.acquire('busy', { waitTimeout: 2_000 })).rejects.toBeInstanceOf(
      LockNotAcquiredError,
    );
    // The fallback re-check backs off from 50 ms to 1 s, jittered down to ¾: at most 8 attempts
    // in 2 s. The two masters that lost the lock grant it, so each attempt is a split vote, made
    // again at most 5 times (a vote cannot tell a holder's majority from a split one): at most
    // 48 rounds, each an acquire and a withdrawal on this master. 20 to 40 are usual; an attempt
    // woken by its own withdrawal would make thousands.
    expect((await attempts()) - before).toBeLessThanOrEqual(96);
    await monitor.quit();
    await lock.release();
  });

  it('wakes a waiter on the release message of any master', async () => {
    const [a, b] = [await boot(), await boot()];
    await Promise.all([masters[0].kill(), masters[1].kill()]);
    const held = await a.locks.acquire('queue', { ttl: 60_000 });
    const waited = b.locks.acquire('queue', { waitTimeout: 30_000 });
    await sleep(300);
    await held.release();
    const lock = await waited;
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  });

  it('issues strictly growing fencing tokens even when one master counts far ahead', async () => {
    const app = await boot();
    // Master 0's counter runs far ahead of the others (as if its clock did), and a stray lock
    // on masters 3 and 4 makes the first majority exactly masters 0, 1 and 2.
    const ahead = 9_000_000_000_000_000;
    await raw[0].set('{lock:}:fence', String(ahead));
    await Promise.all([raw[3].set('lock:ahead', 'stray'), raw[4].set('lock:ahead', 'stray')]);
    const first = await app.locks.acquire('ahead');
    expect(first.fencingToken).toBeGreaterThan(ahead);
    await first.release();
    await Promise.all([raw[3].del('lock:ahead'), raw[4].del('lock:ahead')]);
    // Without master 0, the next majority's own counters would be far lower; the token written
    // back to masters 1 and 2 as a floor, one of which is in any majority of the other four,
    // keeps the next token above the first.
    await masters[0].kill();
    const second = await app.locks.acquire('ahead');
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.release();
  });

  it('refuses as throttled only when masters in a throttle’s window leave no majority free', async () => {
    const app = await boot();
    const holder = '0123456789abcdef0123456789abcdef@other';
    /** Master `i` holds the key for another caller: a throttle granted now, or a plain holder. */
    const holds = async (i: number, throttle: boolean) => {
      const [seconds, micros] = await raw[i].time();
      const fence = Number(seconds) * 1_000_000 + Number(micros);
      const value = throttle ? `h5000.${holder} ${fence}` : `${holder} ${fence}`;
      await raw[i].set('lock:window', value, 'PX', 5_000);
    };
    const refusal = () =>
      app.locks.acquire('window', { waitTimeout: 0 }).then(
        () => new Error('not refused'),
        (error: unknown) => error as LockNotAcquiredError,
      );
    // Masters 3 and 4 free: with the plain holders gone, they and two more make a majority.
    await Promise.all([holds(0, true), holds(1, true), holds(2, false)]);
    expect(await refusal()).toMatchObject({ throttled: false, retryAfterMs: undefined });
    await holds(2, true);
    const early = await refusal();
    expect(early).toMatchObject({ throttled: true });
    expect((early as LockNotAcquiredError).retryAfterMs).toBeGreaterThan(0);
    expect((early as LockNotAcquiredError).retryAfterMs).toBeLessThanOrEqual(5_000);
  });

  it('takes ioredis clients as masters, and leaves them open', async () => {
    const clients = masters.map((master) => new Redis(master.url));
    try {
      const app = await boot({ redis: clients });
      const lock = await app.locks.acquire('clients');
      expect(await settlesOn(lock, 5)).toBe(true);
      await app.close();
      expect(clients.map((client) => client.status)).toEqual(Array(5).fill('ready'));
    } finally {
      await Promise.all(clients.map((client) => client.quit()));
    }
  });

  it('refuses writeFenced, which needs a single store', async () => {
    const app = await boot();
    await expect(app.locks.writeFenced('doc:1', 'v', 1)).rejects.toBeInstanceOf(LockError);
  });

  it('refuses semaphores and read-write locks at the call, naming the option and RedLock', async () => {
    const app = await boot();
    for (const [options, option] of [
      [{ limit: 3 }, 'limit'],
      [{ mode: 'read' }, 'mode'],
      [{ mode: 'write', waitTimeout: 0 }, 'mode'],
    ] as const) {
      const error: unknown = await app.locks.acquire('kinds', options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as LockOptionsError).option).toBe(option);
      expect((error as LockOptionsError).message).toContain('RedLock');
    }
    // Nothing was taken on any master.
    expect(await Promise.all(raw.map((client) => client.exists('lock:kinds')))).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });

  it('refuses a @WithLock semaphore at boot', async () => {
    @Injectable()
    class Api {
      @WithLock('api:<tenant>', { limit: 5 })
      async call(tenant: string) {
        return tenant;
      }
    }
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: masters.map((master) => master.url) })],
      providers: [Api],
    }).compile();
    const error: unknown = await module.init().catch((e: unknown) => e);
    await module.close();
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).option).toBe('limit');
    expect((error as LockOptionsError).message).toMatch(/Api\.call/);
  });
});

describe('RedLock options', () => {
  it('name a master listed twice without its password', async () => {
    const error = await bootLockApp({
      redis: ['redis://:s3cret@a:1', 'redis://b:1', 'redis://:s3cret@a:1/2'],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as Error).message).toContain('a:1');
    expect((error as Error).message).not.toContain('s3cret');
  });

  it('keep passwords out of the error and its value when there are too few masters', async () => {
    const error = await bootLockApp({
      redis: ['redis://user:p@ss@a:1', 'redis://:se/cr3t@b:1'],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockOptionsError);
    const shown = JSON.stringify({
      message: (error as Error).message,
      value: (error as LockOptionsError).value,
    });
    expect(shown).not.toMatch(/p@ss|se\/cr3t/);
  });
});
