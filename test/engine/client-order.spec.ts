import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { REDIS_CLIENTS } from '../../src/store/redis/redis-clients.js';
import type { RedisConnection, RedisScript } from '../../src/store/redis/redis-client.port.js';
import { rawClient, sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';
import { byTier } from '../support/tiers.js';

/** A script that appends its argument to the list it is given, in the order it runs. */
const SOURCE = "redis.call('RPUSH', KEYS[1], ARGV[1]) return 1";
const APPEND: RedisScript<number> = {
  source: SOURCE,
  sha: createHash('sha1').update(SOURCE).digest('hex'),
  decode: Number,
};

/** How many calls go out in one turn: GLIDE left bursts of about a hundred out of order. */
const BURST = 300;

/**
 * The port's promise that the store relies on: calls made one after the other, without
 * awaiting, run in that order (a release sent right after an attempt runs after it). On each
 * client library's adapter.
 */
describe.each<[string, (url: string) => RedisConnection]>(
  byTier({
    quick: [['ioredis', (url) => REDIS_CLIENTS.ioredis.server(url)]],
    all: [
      ['node-redis', (url) => REDIS_CLIENTS['node-redis'].server(url)],
      ['GLIDE', (url) => REDIS_CLIENTS.glide.server(url, 5_000)],
    ],
  }),
)('the %s adapter', (_, connect) => {
  let connection: RedisConnection;
  let monitor: Redis;

  beforeAll(() => {
    connection = connect(sharedRedisUrl());
    monitor = rawClient(sharedRedisUrl());
  });

  afterAll(async () => {
    await connection.client.close();
    await monitor.quit();
  });

  it('runs the calls on one key in the order they were made', async () => {
    const key = `${uniquePrefix()}order`;
    // Twice: whole scripts first, then by SHA.
    for (const round of [0, 1]) {
      const calls = Array.from({ length: BURST }, (__, i) =>
        connection.client.runScript(APPEND, [key], [round * BURST + i]),
      );
      await Promise.all(calls);
    }
    const order = (await monitor.lrange(key, 0, -1)).map(Number);
    await monitor.del(key);
    expect(order).toEqual(Array.from({ length: 2 * BURST }, (__, i) => i));
  });
});
