import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { rawClient, sharedRedisUrl } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { byTier } from '../support/tiers.js';
import { PERIOD, runReplicas, runsPerTick } from '../support/scheduled-replicas.js';

/** The lock's holdFor, as in scheduled-replica.mjs. */
const HOLD_FOR = PERIOD * 0.75;

describe('a scheduled job across three replicas (@nestjs/schedule)', () => {
  let redis: Redis;

  beforeAll(() => {
    redis = rawClient(sharedRedisUrl());
  });

  afterAll(async () => {
    await redis.quit();
  });

  describe.each(['schedule-first', 'lock-first'])('decorators in the order %s', (order) => {
    it('@Cron with @WithLock(onLocked: skip, holdFor): each tick runs once, on one replica', async () => {
      const runs = await runReplicas(redis, { REPLICA_SCHEDULE: 'cron', REPLICA_ORDER: order }, 4);
      const perTick = runsPerTick(runs);
      expect(perTick.length).toBeGreaterThanOrEqual(3);
      expect(perTick.every((count) => count === 1)).toBe(true);
    }, 60_000);

    it('@Interval with @WithLock(onLocked: skip, holdFor): at most one run per holdFor', async () => {
      const { runs } = await runReplicas(
        redis,
        { REPLICA_SCHEDULE: 'interval', REPLICA_ORDER: order },
        4,
      );
      expect(runs.length).toBeGreaterThanOrEqual(3);
      // Each run starts at least holdFor after the previous one took the lock; a run is
      // recorded a little after it took the lock, so allow one run more than the window fits.
      const window = runs[runs.length - 1].at - runs[0].at;
      expect(runs.length).toBeLessThanOrEqual(Math.floor(window / HOLD_FOR) + 2);
    }, 60_000);
  });

  it('without the lock, every replica runs every tick (what the recipe prevents)', async () => {
    const runs = await runReplicas(redis, { REPLICA_SCHEDULE: 'cron', REPLICA_LOCKED: 'false' }, 3);
    expect(Math.max(...runsPerTick(runs))).toBe(3);
  }, 60_000);
});

/**
 * Replicas whose clocks disagree fire a tick at different moments: a tick runs once when every
 * replica fires it within a spread D (their clocks' offsets plus their lag) such that
 * D < holdFor ≤ period − D (docs/scheduled-jobs.md). Here D is 500 ms and holdFor is half the
 * period, 1 s: 500 ms of margin for the lag on either side.
 */
const OFFSETS = [-250, 0, 250];

describe.each(byTier({ quick: ['Redis'], all: ['ZooKeeper', 'PostgreSQL'] }))(
  'a scheduled job on %s across replicas whose clocks disagree by up to 500 ms',
  (backend) => {
    let redis: Redis;
    let zookeeper: ZooKeeperServer | undefined;
    let postgres: PostgresServer | undefined;
    const env: Record<string, string> = {};

    beforeAll(async () => {
      redis = rawClient(sharedRedisUrl());
      if (backend === 'ZooKeeper') {
        zookeeper = await ZooKeeperServer.start();
        env.REPLICA_ZOOKEEPER = zookeeper.address;
        env.REPLICA_ZOOKEEPER_ROOT = `/scheduled-${randomBytes(4).toString('hex')}`;
      }
      if (backend === 'PostgreSQL') {
        postgres = await PostgresServer.start();
        env.REPLICA_POSTGRES = postgres.url;
      }
    }, 60_000);

    afterAll(async () => {
      await redis.quit();
      await zookeeper?.stop();
      await postgres?.stop();
    });

    it('runs each tick exactly once when holdFor is within the bound', async () => {
      const runs = await runReplicas(
        redis,
        { ...env, REPLICA_SCHEDULE: 'cron', REPLICA_HOLD_FOR: String(PERIOD / 2) },
        4,
        { offsets: OFFSETS },
      );
      const perTick = runsPerTick(runs);
      expect(perTick.length).toBeGreaterThanOrEqual(3);
      expect(perTick).toEqual(perTick.map(() => 1));
    }, 60_000);

    it('runs a tick more than once when holdFor is shorter than the spread (what the bound is for)', async () => {
      const runs = await runReplicas(
        redis,
        { ...env, REPLICA_SCHEDULE: 'cron', REPLICA_HOLD_FOR: '50' },
        3,
        { offsets: OFFSETS },
      );
      expect(Math.max(...runsPerTick(runs))).toBeGreaterThan(1);
    }, 60_000);
  },
);
