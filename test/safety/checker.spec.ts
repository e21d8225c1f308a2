import { SafetyChecker } from './checker/checker.mjs';
import { formatSummary } from './checker/analyze.mjs';
import { RedisServer } from '../support/redis-server.js';

/**
 * The small-size run of the multi-process safety checker (issue 6): 6 worker processes, each its
 * own Nest application context, contend for one key while the nemesis kills a holder, pauses one
 * past its TTL and restarts Redis under one. Asserts properties from the history, not durations.
 * The same over 5 RedLock masters, with 8 workers, where 2 masters and then 3 restart empty under
 * a holder. Then the fair handover's waiters are attacked: their pub/sub connections lag, queued
 * ones die, short-TTL ones wait longer than their TTL. The full-size runs are `npm run safety`
 * and `npm run safety -- --redlock`. Needs the built library (`npm run build`).
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
    expect(result.explainedOverlaps + result.toldOverlaps).toBe(result.overlaps);
    expect(result.outcomes.LockLostError).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('keeps them through lagging pub/sub, waiters killed while queued and short-TTL waiters', async () => {
    const checker = new SafetyChecker({
      redis,
      workers: 6,
      ttl: 400,
      faults: ['lag', 'kill-waiter', 'short-ttl'],
      // Late by 2 to 3 handover leases (500 ms), 2.5 to 3.75 TTLs.
      lagMs: [1_000, 1_500],
      gapMs: 500,
      tailMs: 500,
    });
    const result = await checker.run();
    console.log(formatSummary(result));

    expect(result.violations).toEqual([]);
    expect(result.faultsByKind).toEqual({ lag: 1, 'kill-waiter': 1, 'short-ttl': 1 });
    expect(result.processes).toBe(6 + result.killWaiterVictims);
    expect(result.killWaiterVictims).toBeGreaterThanOrEqual(1);
    expect(result.lostUpdates).toBe(0);
    expect(result.counter).toBe(result.acceptedWrites);
    // None of these faults takes a lock from its holder. Two holders overlap only where the
    // older one's validity ran out inside (a short TTL on a busy machine) and it was told first.
    expect(result.explainedOverlaps).toBe(0);
    expect(result.toldOverlaps).toBe(result.overlaps);
    expect(result.staleWritesAccepted).toBe(0);
    expect(result.tokensHandedOutOfOrder).toBe(0);
    expect(result.grantedButLost).toBe(0);
    // Notices did come late, and the lagging waiters still got the lock meanwhile.
    expect(result.lagLateChunks).toBeGreaterThan(0);
    expect(result.lagLaggedSections).toBeGreaterThan(0);
    // The dead waiters' cost was measured (and checked against its bound, a violation).
    expect(result.deadWaiterGapMs.filter((ms) => typeof ms === 'number')).toHaveLength(1);
    // Short-TTL callers were handed the lock after waiting longer than their TTL.
    expect(result.shortTtlWaitedPastTtl).toBeGreaterThan(0);
  }, 120_000);

  it('keeps them over 5 RedLock masters through kill, stop and restarts of a minority and a majority', async () => {
    // The checker starts the 5 masters itself and stops them however the run ends.
    const checker = new SafetyChecker({
      redlock: { masters: 5 },
      workers: 8,
      ttl: 400,
      faults: ['kill', 'stop', 'minority', 'majority'],
      gapMs: 500,
      tailMs: 500,
    });
    const result = await checker.run();
    console.log(formatSummary(result));

    expect(result.violations).toEqual([]);
    expect(result.faultsByKind).toEqual({ kill: 1, stop: 1, minority: 1, majority: 1 });
    expect(result.processes).toBe(9); // 8, plus the replacement of the killed one
    expect(result.lostUpdates).toBe(0);
    expect(result.staleWritesAccepted).toBe(0);
    expect(result.tokensOutOfOrder).toBe(0);
    expect(result.tokensHandedOutOfOrder).toBe(0);
    expect(result.counter).toBe(result.acceptedWrites);
    expect(result.acceptedWrites).toBeGreaterThan(0);
    expect(result.explainedOverlaps + result.toldOverlaps).toBe(result.overlaps);
    // The kill was checked against the quorum-th PTTL, not just waited out.
    expect(result.killBoundMs.filter((ms) => typeof ms === 'number')).toHaveLength(1);
    // A minority restart either left the lock on a majority, which its holder kept, or (the
    // lock being on too few masters) took it, and was then checked as a majority restart is.
    // Kept, unless the holder's renewals could not be decided in time (a starved process on an
    // overloaded machine), which it was told of before anybody else got in.
    expect(result.minorityKept + result.minorityLostToSlowRenewals).toBe(result.minoritySurvivable);
    expect(result.lossFaults).toBe(2 - result.minoritySurvivable);
    expect(result.lossTold).toBe(result.lossFaults);
    expect(result.lossStaleWriteRefused).toBe(result.lossFaults);
    expect(result.lossLockLost).toBe(result.lossFaults);
  }, 120_000);
});
