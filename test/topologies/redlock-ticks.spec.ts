import type { Redis } from 'ioredis';
import { rawClient, sharedRedisUrl } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';
import { runReplicas, runsPerTick } from '../support/scheduled-replicas.js';

/**
 * Three replicas fire a `@Cron` job under `@WithLock(onLocked: 'skip', holdFor)` at the same
 * moments, on RedLock over three masters. RedLock promises to work while a minority of masters
 * is lost: with one master dead or hung, two replicas can each win one of the two live masters
 * (a split vote, which nobody wins); each tick must still run exactly once, not nowhere.
 */
describe('a scheduled job on RedLock over 3 masters, one of them lost', () => {
  const TICKS = 6;
  let records: Redis;
  let masters: RedisServer[];

  beforeAll(() => {
    records = rawClient(sharedRedisUrl());
  });

  afterAll(async () => {
    await records.quit();
  });

  beforeEach(async () => {
    masters = await Promise.all([1, 2, 3].map(() => RedisServer.start()));
  });

  afterEach(async () => {
    for (const master of masters) if (master.pid) process.kill(master.pid, 'SIGCONT');
    await Promise.all(masters.map((master) => master.stop()));
  });

  const env = () => ({
    REPLICA_SCHEDULE: 'cron',
    REPLICA_REDLOCK: masters.map((master) => master.url).join(','),
    REPLICA_HOLD_FOR: '1000',
  });

  it('runs each tick exactly once with one master dead', async () => {
    const ticks = await runReplicas(records, env(), TICKS, { afterBoot: () => masters[2].kill() });
    const perTick = runsPerTick(ticks);
    expect(ticks.ticks.length).toBeGreaterThanOrEqual(TICKS - 2);
    expect(perTick).toEqual(perTick.map(() => 1));
  }, 60_000);

  it('runs each tick exactly once with one master hung', async () => {
    const hang = async () => {
      process.kill(masters[2].pid!, 'SIGSTOP');
    };
    const ticks = await runReplicas(records, env(), TICKS, { afterBoot: hang });
    const perTick = runsPerTick(ticks);
    expect(ticks.ticks.length).toBeGreaterThanOrEqual(TICKS - 2);
    expect(perTick).toEqual(perTick.map(() => 1));
  }, 60_000);
});
