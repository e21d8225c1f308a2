import { Cluster, type Redis } from 'ioredis';
import { slotOf, slotTag } from '../../src/keys/cluster-slots.js';
import { bootLockApp, rawClient, type LockApp } from '../support/lock-app.js';
import { RedisClusterHarness } from '../support/redis-cluster.js';
import { RedisServer } from '../support/redis-server.js';

/** A server clock in µs an hour ahead of `redis`'s: where a counter is left after such a clock. */
async function anHourAhead(redis: Redis | Cluster): Promise<number> {
  const [seconds, micros] = await redis.time();
  return (Number(seconds) + 3_600) * 1_000_000 + Number(micros);
}

/**
 * Fencing tokens of a key only grow, across restarts of the app, upgrades included. Earlier
 * versions of the library kept one counter per server (or per Cluster slot) in `{}:fence`,
 * outside the key prefix. Its last token is normally the server's clock in µs, but it is ahead
 * of that clock when the clock once ran ahead (a corrected clock, a failover from a master whose
 * clock was fast): that is what the counter is for. An app upgraded to the counter under its
 * prefix must still issue tokens above every token the earlier version issued, or a resource
 * guarded by `writeFenced` would refuse the new holders (and rank old holders above them).
 */
describe('fencing tokens across an upgrade from the counter outside the prefix', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: LockApp | undefined;

  beforeEach(async () => {
    server = await RedisServer.start();
    redis = rawClient(server.url);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await redis.quit();
    await server.stop();
  });

  it('issues tokens above the last one of the earlier counter', async () => {
    // The earlier version's counter, left an hour ahead of the server's clock, and the guard of
    // a resource that one of its holders wrote with its last token.
    const earlierToken = await anHourAhead(redis);
    await redis.set('{}:fence', String(earlierToken));
    await redis.set('{order:1}:fenced', String(earlierToken));

    app = await bootLockApp({ redis: server.url });
    const lock = await app.locks.acquire('order:1');
    expect(lock.fencingToken).toBeGreaterThan(earlierToken);
    await expect(
      app.locks.writeFenced('order:1', 'paid', lock.fencingToken),
    ).resolves.toBeUndefined();
    await lock.release();
    const next = await app.locks.acquire('order:1');
    await next.release();
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
  });
});

describe('fencing tokens across an upgrade from the counters outside the prefix, on a Cluster', () => {
  let cluster: RedisClusterHarness;
  let client: Cluster;
  let app: LockApp | undefined;

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start(3);
    client = new Cluster(cluster.nodes);
  });

  afterAll(async () => {
    await app?.close();
    await client.quit();
    await cluster.stop();
  });

  it("issues tokens above the last one of the earlier counter of the key's slot", async () => {
    // Earlier versions kept one counter per slot, tagged with the slot's three characters.
    const earlierCounter = `{${slotTag(slotOf('lock:order:1'))}}:fence`;
    const earlierToken = await anHourAhead(client);
    await client.set(earlierCounter, String(earlierToken));

    app = await bootLockApp({ redis: { cluster: cluster.nodes } });
    const lock = await app.locks.acquire('order:1');
    await lock.release();
    expect(lock.fencingToken).toBeGreaterThan(earlierToken);
    // Kept in step, for instances of the earlier version still running beside this one.
    expect(Number(await client.get(earlierCounter))).toBe(lock.fencingToken);
    await client.del(earlierCounter);
  });
});
