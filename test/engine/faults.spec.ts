import { Redis } from 'ioredis';
import { LockConnectionError, LockLostError, type LockModuleOptions } from '../../src/index.js';
import { NEXT_FENCE_LUA } from '../../src/store/redis/scripts/fence.lua.js';
import { RedisServer } from '../support/redis-server.js';
import { aborted, bootLockApp, rawClient, type LockApp } from '../support/lock-app.js';
import { byTier } from '../support/tiers.js';

describe.each<[string, LockModuleOptions]>(
  byTier<[string, LockModuleOptions]>({
    quick: [['ioredis', {}]],
    all: [
      ['node-redis', { redisClient: 'node-redis' }],
      ['GLIDE', { redisClient: 'glide' }],
    ],
  }),
)('when the Redis server dies (through %s)', (_, client) => {
  let server: RedisServer;
  let app: LockApp;

  beforeEach(async () => {
    server = await RedisServer.start();
    app = await bootLockApp({ redis: server.url, commandTimeout: 500, ...client });
  });

  afterEach(async () => {
    await app.close();
    await server.stop();
  });

  it('aborts the signals of held locks with LockLostError instead of hanging', async () => {
    const locks = await Promise.all([
      app.locks.acquire('a', { ttl: 300 }),
      app.locks.acquire('b', { ttl: 600 }),
    ]);
    await server.kill();
    const reasons = await Promise.all(locks.map(aborted));
    for (const reason of reasons) {
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toMatch(/validity ran out/);
    }
  });

  it('fails an acquisition with LockConnectionError rather than waiting forever', async () => {
    await server.kill();
    await expect(app.locks.acquire('down', { waitTimeout: 60_000 })).rejects.toBeInstanceOf(
      LockConnectionError,
    );
  });

  it('works again once Redis is back, with fencing tokens that still grow', async () => {
    const before = await app.locks.acquire('fenced', { ttl: 300 });
    await server.restart();
    expect(await aborted(before)).toBeInstanceOf(LockLostError);
    const after = await app.locks.acquire('fenced', { waitTimeout: 5_000 });
    expect(after.fencingToken).toBeGreaterThan(before.fencingToken);
    expect(await after.release()).toBe(true);
  });
});

describe('fencing tokens', () => {
  let server: RedisServer;
  let redis: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
  });

  afterAll(async () => {
    await redis.quit();
    await server.stop();
  });

  it('strictly increase across release, expiry, deletion and a new module instance', async () => {
    const tokens: number[] = [];
    let app = await bootLockApp({ redis: server.url });
    const released = await app.locks.acquire('fence');
    tokens.push(released.fencingToken);
    await released.release();
    const expired = await app.locks.acquire('fence', { ttl: 50, watchdog: false });
    tokens.push(expired.fencingToken);
    const afterExpiry = await app.locks.acquire('fence', { waitTimeout: 2_000 });
    tokens.push(afterExpiry.fencingToken);
    await redis.del(afterExpiry.key);
    const afterDeletion = await app.locks.acquire('fence');
    tokens.push(afterDeletion.fencingToken);
    await app.close();

    app = await bootLockApp({ redis: server.url });
    const afterRestart = await app.locks.acquire('fence');
    tokens.push(afterRestart.fencingToken);
    await app.close();

    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    expect(tokens.every(Number.isSafeInteger)).toBe(true);
  });

  it('keeps the counter without expiry, and above a clock that went back', async () => {
    const app = await bootLockApp({ redis: server.url });
    try {
      const first = await app.locks.acquire('clock');
      await first.release();
      expect(await redis.pttl('{lock:}:fence')).toBe(-1);
      // A counter far ahead of the server clock, as after the clock was stepped back.
      const ahead = first.fencingToken + 10 ** 12;
      await redis.set('{lock:}:fence', String(ahead));
      const next = await app.locks.acquire('clock');
      expect(next.fencingToken).toBe(ahead + 1);
      expect(await redis.pttl('{lock:}:fence')).toBe(-1);
    } finally {
      await app.close();
    }
  });

  it('keeps one counter per prefix for the whole server, whatever the keys', async () => {
    const app = await bootLockApp({ redis: server.url });
    const other = await bootLockApp({ redis: server.url, keyPrefix: 'other:' });
    const plain = await app.locks.acquire('order:7');
    const tagged = await app.locks.acquire('{user:1}:cart');
    const elsewhere = await other.locks.acquire('order:7');
    expect(await redis.get('{lock:}:fence')).toBe(String(tagged.fencingToken));
    expect(await redis.get('{other:}:fence')).toBe(String(elsewhere.fencingToken));
    await Promise.all([app.close(), other.close()]);
    expect((await redis.keys('*')).sort()).toEqual(['{lock:}:fence', '{other:}:fence']);
    expect(tagged.fencingToken).toBeGreaterThan(plain.fencingToken);
  });

  /**
   * The counter's Lua on its own (KEYS[2] the counter, as in the scripts): `next_fence` takes the
   * counter's last token with `SET … GET` where the server has it, and with a `GET` before the
   * `SET` on Redis 6.2, whose scripts do not know the server's version. Both paths run here (the
   * second forced, as the test servers are newer), and must issue the same tokens. They run after
   * the cases above, which count the server's keys.
   */
  describe('the counter alone', () => {
    async function serverMicros(): Promise<number> {
      const [seconds, micros] = await redis.time();
      return Number(seconds) * 1_000_000 + Number(micros);
    }

    describe.each([
      ['with SET … GET', 'true'],
      ['with GET, then SET (Redis 6.2)', 'false'],
    ])('%s', (_, setGet) => {
      const nextFence = async (counter: string): Promise<number> =>
        Number(
          await redis.eval(
            `${NEXT_FENCE_LUA}\nSET_GET = ${setGet}\nreturn string.format('%.0f', next_fence())`,
            2,
            'lock',
            counter,
          ),
        );

      it('issues the server clock in µs when the counter is missing or behind it', async () => {
        const counter = `{fence-${setGet}}:missing`;
        const before = await serverMicros();
        const first = await nextFence(counter);
        await redis.set(counter, String(before - 10_000_000));
        const second = await nextFence(counter);
        const after = await serverMicros();
        expect(first).toBeGreaterThanOrEqual(before);
        expect(second).toBeGreaterThan(first);
        expect(second).toBeLessThanOrEqual(after);
        expect(Number(await redis.get(counter))).toBe(second);
      });

      it('issues one above the counter when it is ahead of the clock, and keeps it there', async () => {
        const counter = `{fence-${setGet}}:ahead`;
        const ahead = (await serverMicros()) + 10 ** 12;
        await redis.set(counter, String(ahead));
        expect(await nextFence(counter)).toBe(ahead + 1);
        expect(await nextFence(counter)).toBe(ahead + 2);
        expect(Number(await redis.get(counter))).toBe(ahead + 2);
        expect(await redis.pttl(counter)).toBe(-1);
      });
    });

    it('takes the one-command path on this server', async () => {
      const counter = '{fence-path}:count';
      await redis.config('RESETSTAT');
      await redis.eval(`${NEXT_FENCE_LUA}\nreturn next_fence()`, 2, 'lock', counter);
      const stats = await redis.info('commandstats');
      expect(stats).not.toMatch(/^cmdstat_get:/m);
      expect(stats).toMatch(/^cmdstat_set:calls=1,/m);
    });
  });
});
