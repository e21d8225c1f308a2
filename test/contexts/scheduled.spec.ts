import { randomBytes } from 'node:crypto';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { rawClient, sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';

const REPLICA = fileURLToPath(new URL('../support/scheduled-replica.mjs', import.meta.url));
const CLOCK_OFFSET = fileURLToPath(new URL('../support/clock-offset.mjs', import.meta.url));
/** The replicas' schedule period and the lock's holdFor, as in scheduled-replica.mjs. */
const PERIOD = 2_000;
const HOLD_FOR = PERIOD * 0.75;

interface Run {
  at: number;
  pid: number;
}

/**
 * Runs three replicas of one app, each a process with its own connections, for `periods`
 * periods of their schedule; resolves with the job's runs, in the order they started. With
 * `offsets`, replica i's wall clock runs `offsets[i]` ms off the machine's.
 */
async function runReplicas(
  redis: Redis,
  env: Record<string, string>,
  periods: number,
  offsets?: number[],
): Promise<Run[]> {
  const prefix = uniquePrefix();
  const runs = `${prefix}runs`;
  const replicas: ChildProcess[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const replica = fork(REPLICA, [], {
        execArgv: offsets ? [...process.execArgv, '--import', CLOCK_OFFSET] : process.execArgv,
        env: {
          ...process.env,
          ...env,
          CLOCK_OFFSET_MS: String(offsets?.[i] ?? 0),
          REPLICA_REDIS_URL: sharedRedisUrl(),
          REPLICA_KEY_PREFIX: prefix,
          REPLICA_RUNS: runs,
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      replicas.push(replica);
    }
    await Promise.all(replicas.map((replica) => once(replica, 'message')));
    await sleep(periods * PERIOD);
  } finally {
    await Promise.all(
      replicas.map(async (replica) => {
        if (replica.exitCode !== null) return;
        const exited = once(replica, 'exit');
        if (replica.connected) replica.disconnect();
        await exited;
      }),
    );
  }
  const entries = await redis.lrange(runs, 0, -1);
  await redis.del(runs);
  return entries.map((entry) => {
    const [at, pid] = entry.split(':').map(Number);
    return { at, pid };
  });
}

/** How many runs each period of the clock-aligned schedule had. */
function runsPerTick(runs: Run[]): number[] {
  const ticks = new Map<number, number>();
  for (const { at } of runs) {
    const tick = Math.round(at / PERIOD);
    ticks.set(tick, (ticks.get(tick) ?? 0) + 1);
  }
  return [...ticks.values()];
}

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
      const runs = await runReplicas(
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

describe.each(['Redis', 'ZooKeeper', 'PostgreSQL'])(
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
        OFFSETS,
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
        OFFSETS,
      );
      expect(Math.max(...runsPerTick(runs))).toBeGreaterThan(1);
    }, 60_000);
  },
);
