import type { Redis } from 'ioredis';
import { NEXT_FENCE_LUA } from '../../src/store/redis/scripts/fence.lua.js';
import { rawClient } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';

/**
 * The fencing counter's Lua on its own (KEYS[2] the counter, as in the scripts), on a real server: `next_fence` takes the counter's last
 * token with `SET … GET` where the server has it, and with a `GET` before the `SET` on Redis 6.2,
 * whose scripts do not know the server's version. Both paths run here (the second forced, as the
 * test servers are newer), and must issue the same tokens.
 */
describe('the fencing counter', () => {
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
