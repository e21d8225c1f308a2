import { SafetyChecker } from './checker/checker.mjs';
import { formatSummary } from './checker/analyze.mjs';
import { RedisServer } from '../support/redis-server.js';

/**
 * The small-size run of the multi-process safety checker (issue 6): 6 worker processes, each its
 * own Nest application context, contend for one key while the nemesis kills a holder, pauses one
 * past its TTL and restarts Redis under one. Asserts properties from the history, not durations.
 * The full-size run is `npm run safety`. Needs the built library (`npm run build`).
 */
describe('the multi-process safety checker (small size)', () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await RedisServer.start();
  });

  afterAll(async () => {
    await redis.stop();
  });

  it('keeps mutual exclusion, fencing and every update through kill, stop and restart', async () => {
    const checker = new SafetyChecker({
      redis,
      workers: 6,
      ttl: 400,
      faults: ['kill', 'stop', 'restart'],
      gapMs: 500,
      tailMs: 500,
    });
    const result = await checker.run();
    const summary = formatSummary(result);
    console.log(summary);

    expect(result.violations).toEqual([]);
    expect(result.faultsByKind).toEqual({ kill: 1, stop: 1, restart: 1 });
    expect(result.processes).toBe(7); // 6, plus the replacement of the killed one
    expect(result.lostUpdates).toBe(0);
    expect(result.staleWritesAccepted).toBe(0);
    expect(result.tokensOutOfOrder).toBe(0);
    expect(result.counter).toBe(result.acceptedWrites);
    expect(result.acceptedWrites).toBeGreaterThan(0);
    // The paused holder woke up, learnt it had lost the lock, and its write was refused.
    expect(result.staleWritesRejected + result.staleReadsRejected).toBeGreaterThanOrEqual(1);
    expect(result.explainedOverlaps).toBe(result.overlaps);
    expect(result.outcomes.LockLostError).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
