import { SafetyChecker, type CheckerOptions } from './checker/checker.mjs';
import { formatSummary } from './checker/analyze.mjs';
import { PostgresServer } from '../support/postgres-server.js';
import { RedisServer } from '../support/redis-server.js';
import {
  PARTITION_SYNC_LIMIT,
  ZooKeeperEnsemble,
  ZooKeeperServer,
} from '../support/zookeeper-server.js';

/**
 * The small-size run of the multi-process safety checker: 6 worker processes, each its own Nest
 * application context, contend for one key while the nemesis kills a holder, pauses one past its
 * TTL and restarts Redis under one; and SIGTERMs holders, whose apps must drain (finish the
 * section under the lock, refuse their other calls, exit), while three callers per process
 * check that the lock goes to callers in the order they took their places in line. Asserts
 * properties from the history, not durations. The first run again with the workers on GLIDE,
 * on iovalkey and on node-redis instead of ioredis. Holders hand their locks off, and forged
 * copies of the handles (a fencing token raised, a token changed) are presented for adoption
 * before the genuine ones (see checker/forge.mjs).
 * The same over 5 RedLock masters, with 8 workers, where 2 masters and then 3 restart empty under
 * a holder; and over 3, one of them killed and then hung while every worker asks for the lock
 * with no wait at one moment, round after round (see checker/ticks.mjs). Then the fair
 * handover's waiters are attacked: their pub/sub connections lag, queued ones die, short-TTL
 * ones wait longer than their TTL; and with three callers per worker, the handover to a caller
 * of the releaser's own process meets the faults. And over ZooKeeper: a holder killed,
 * paused, drained, cut off until its session expires, and the server restarted under one; and on a
 * ZooKeeper ensemble, a holder's follower cut off from the leader while it still serves; and a
 * semaphore and a read-write lock on ZooKeeper under the standalone server's faults. And over
 * PostgreSQL: a holder killed, paused, drained, its handle forged, cut off until its lease ran
 * out, its connections terminated by the server, and the server restarted under one. And a
 * leader election on one Redis and on ZooKeeper, whose leader resigns, is SIGTERMed, killed and
 * paused in turn, never leaving two leaders at once (see checker/leader.mjs). The full-size
 * runs are `npm run safety`, `npm run safety -- --redlock`, `npm run safety -- --zookeeper`,
 * `npm run safety -- --zookeeper --ensemble` and `npm run safety -- --postgres`.
 * Needs the built library (`npm run build`).
 */
/** What every run must keep, whatever its faults: read from its result... */
const safety = (result: Awaited<ReturnType<SafetyChecker['run']>>) => ({
  lostUpdates: result.lostUpdates,
  staleWritesAccepted: result.staleWritesAccepted,
  tokensOutOfOrder: result.tokensOutOfOrder,
  unexplainedOverlaps: result.overlaps - result.explainedOverlaps - result.toldOverlaps,
});
/** ...and what it must be. */
const SAFE = {
  lostUpdates: 0,
  staleWritesAccepted: 0,
  tokensOutOfOrder: 0,
  unexplainedOverlaps: 0,
};
/**
 * How the holders whose lock a fault took (their session expired under them) fared: how many
 * were told within their validity, before the next holder acquired, had their stale write
 * refused, and saw `using` reject with LockLostError...
 */
const losses = (result: Awaited<ReturnType<SafetyChecker['run']>>) => ({
  lossFaults: result.lossFaults,
  told: result.lossTold,
  toldBeforeNext: result.lossToldBeforeNext,
  staleWriteRefused: result.lossStaleWriteRefused,
  lockLost: result.lossLockLost,
});
/** ...and what that must be: all of them, each time. */
const allToldOf = (lossFaults: number) => ({
  lossFaults,
  told: lossFaults,
  toldBeforeNext: lossFaults,
  staleWriteRefused: lossFaults,
  lockLost: lossFaults,
});

/**
 * Runs the checker at the small size (6 workers, a ttl of 400 ms, half a second between faults
 * unless `options` say otherwise) and prints its summary.
 */
async function run(options: CheckerOptions) {
  const result = await new SafetyChecker({
    workers: 6,
    ttl: 400,
    gapMs: 500,
    tailMs: 500,
    ...options,
  }).run();
  console.log(formatSummary(result));
  return result;
}

describe('the multi-process safety checker (small size)', () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await RedisServer.start();
  });

  afterAll(async () => {
    await redis.stop();
  });

  it('keeps mutual exclusion, fencing and every update through kill, stop and restart', async () => {
    const result = await run({
      redis,
      faults: ['kill', 'stop', 'restart'],
    });

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

  it.each(['glide', 'iovalkey', 'node-redis'] as const)(
    'keeps them through kill, stop and restart with the workers on %s',
    async (client) => {
      const result = await run({ redis, client, faults: ['kill', 'stop', 'restart'] });

      expect({ violations: result.violations, faults: result.faultsByKind }).toEqual({
        violations: [],
        faults: { kill: 1, stop: 1, restart: 1 },
      });
      expect(safety(result)).toEqual(SAFE);
      expect(result.counter).toBe(result.acceptedWrites);
      expect(result.acceptedWrites).toBeGreaterThan(0);
      expect(result.staleWritesRejected + result.staleReadsRejected).toBeGreaterThanOrEqual(1);
    },
    120_000,
  );

  it('refuses forged copies of a handed-off lock’s handle, and lets the genuine one through', async () => {
    const result = await run({ redis, faults: ['forge', 'forge'] });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
      // Nobody held the lock under a fencing token that no hand-off gave, and no acquisition
      // after one went below it.
      forgedHolds: result.forgedHolds,
      tokensHandedOutOfOrder: result.tokensHandedOutOfOrder,
    }).toEqual({
      violations: [],
      faults: { forge: 2 },
      ...SAFE,
      forgedHolds: 0,
      tokensHandedOutOfOrder: 0,
    });
    expect(result.counter).toBe(result.acceptedWrites);
    // The raised fencing token was refused by the adopter's proof against the store (unless the
    // lock lapsed first, on a loaded machine), and a genuine adopter's write went in.
    expect(result.forgeFencingProved).toBeGreaterThanOrEqual(1);
    expect(result.forgeGenuineWritten).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('keeps them when a release hands the lock to a caller of its own process, through every holder fault', async () => {
    const result = await run({
      redis,
      callers: 3,
      faults: ['kill', 'stop', 'restart', 'lag', 'short-ttl'],
      lagMs: [1_000, 1_500],
    });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
    }).toEqual({
      violations: [],
      faults: { kill: 1, stop: 1, restart: 1, lag: 1, 'short-ttl': 1 },
      ...SAFE,
    });
    expect(result.counter).toBe(result.acceptedWrites);
    // The path under attack was taken, and often.
    expect(result.sameProcessHandovers).toBeGreaterThan(0);
  }, 120_000);

  it('lets SIGTERMed holders finish under their locks, and grants in arrival order across callers and processes', async () => {
    const result = await run({
      redis,
      callers: 3,
      faults: ['drain', 'drain'],
      // Longer quiet phases: the arrival order must hold in them.
      gapMs: 1_500,
      tailMs: 1_000,
    });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
      processes: result.processes, // 6, plus a replacement for each drained worker
      // Each drained holder finished its section under its lock (nobody else in before its
      // write, its signal not aborted, its write accepted, using() resolved) and exited.
      drainsKept: result.drainsKept,
      // Refusals are not failures.
      failures: result.acquireFailures.LockShuttingDownError,
      refusals: result.refusals,
      overtakenQuiet: result.overtakenQuiet,
      firstAttemptsNotSent: result.firstAttemptsNotSent,
    }).toEqual({
      violations: [],
      faults: { drain: 2 },
      ...SAFE,
      processes: 8,
      drainsKept: 2,
      failures: undefined,
      refusals: result.drainRefusedWaiters + result.drainRefusedNewCalls,
      overtakenQuiet: 0,
      firstAttemptsNotSent: 0,
    });
    expect(result.outcomes).toEqual({ ok: result.sections });
    // The draining workers' other callers were refused, and the order was measured, often
    // between callers of one process.
    expect(result.refusals).toBeGreaterThan(0);
    expect(result.waitedGrants).toBeGreaterThan(50);
    expect(result.sameProcessHandovers).toBeGreaterThan(0);
  }, 120_000);

  it('hands the leadership of an election over through resign, SIGTERM, kill and SIGSTOP, never to two leaders at once', async () => {
    const result = await run({
      redis,
      faults: ['leader', 'leader', 'leader', 'leader'],
    });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
      endings: result.leaderEndings,
    }).toEqual({
      violations: [],
      faults: { leader: 4 },
      ...SAFE,
      endings: ['resign', 'term', 'kill', 'stop'],
    });
    // Resigned and SIGTERMed leaders were told before the next began; the killed and paused
    // ones could not be, and the fence refused the paused one's writes once it woke.
    expect(result.leaderToldBeforeNext).toBeGreaterThanOrEqual(2);
    expect(result.leaderStaleWritesRefused).toBeGreaterThan(0);
    expect(result.processes).toBe(8); // 6, plus the replacements of the SIGTERMed and killed
  }, 120_000);

  it('keeps them through lagging pub/sub, waiters killed while queued and short-TTL waiters', async () => {
    const result = await run({
      redis,
      faults: ['lag', 'kill-waiter', 'short-ttl'],
      // Late by 2 to 3 handover leases (500 ms), 2.5 to 3.75 TTLs.
      lagMs: [1_000, 1_500],
    });

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

  it('grants in arrival order, across callers and processes, while the queue mark keeps being lost, holds nobody on stale grant notices, and keeps tokens growing after the clock steps back', async () => {
    const result = await run({
      redis,
      callers: 3,
      faults: ['unmark', 'stale-turn', 'clock-back', 'unmark'],
      gapMs: 1_000,
    });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
      overtakenQuiet: result.overtakenQuiet,
    }).toEqual({
      violations: [],
      faults: { unmark: 2, 'stale-turn': 1, 'clock-back': 1 },
      ...SAFE,
      overtakenQuiet: 0,
    });
    // Tokens came from the counter while it led the clock, and kept growing.
    expect(result.clockBackWhileAhead).toBeGreaterThan(0);
    expect(result.counter).toBe(result.acceptedWrites);
    // The path under attack was taken: releases found no mark and left waiters queued, and
    // the lock went on to them meanwhile.
    expect(result.unmarkStripped).toBeGreaterThan(0);
    expect(result.unmarkFreeWithQueue).toBeGreaterThan(0);
    expect(result.unmarkSections).toBeGreaterThan(0);
    // Waiters refused since a grant were told of it as theirs, and nobody held on it (SAFE).
    expect(result.staleTurnNotices).toBeGreaterThan(0);
    expect(result.staleTurnSections).toBeGreaterThan(0);
  }, 120_000);

  it('keeps them over PostgreSQL through kill, stop, a drain, a forged handle, a restart, a cut-off holder and terminated connections', async () => {
    const server = await PostgresServer.start();
    try {
      const result = await run({
        postgres: { server },
        faults: ['kill', 'stop', 'drain', 'forge', 'restart', 'expire', 'terminate'],
      });

      expect({
        violations: result.violations,
        faults: result.faultsByKind,
        processes: result.processes, // 6, plus the replacements of the killed and drained ones
        drainsKept: result.drainsKept,
        ...safety(result),
        // The cut-off holder was told within its validity and before anybody else acquired,
        // and its stale write was refused.
        ...losses(result),
      }).toEqual({
        violations: [],
        faults: { kill: 1, stop: 1, drain: 1, forge: 1, restart: 1, expire: 1, terminate: 1 },
        processes: 8,
        drainsKept: 1,
        ...SAFE,
        ...allToldOf(1),
      });
      expect(result.counter).toBe(result.acceptedWrites);
      expect(result.acceptedWrites).toBeGreaterThan(0);
      // The forged copies were refused (a violation otherwise), nobody held under them.
      expect(result.forgedHolds).toBe(0);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it.each([
    ['a semaphore of 3 permits', { limit: 3 }],
    ['a read-write lock', 'rw'],
  ] as const)(
    'keeps %s within its bounds through every fault of the single-Redis mode',
    async (_, kind) => {
      const result = await run({
        redis,
        kind,
        faults: ['kill', 'stop', 'restart', 'lag', 'kill-waiter', 'short-ttl'],
        lagMs: [1_000, 1_500],
      });

      expect(result.violations).toEqual([]);
      expect(result.faultsByKind).toEqual({
        kill: 1,
        stop: 1,
        restart: 1,
        lag: 1,
        'kill-waiter': 1,
        'short-ttl': 1,
      });
      expect(result.lostUpdates).toBe(0);
      expect(result.counter).toBe(result.acceptedWrites);
      expect(result.acceptedWrites).toBeGreaterThan(0);
      // Holders did share the key: up to the limit, or readers together.
      expect(result.mostInside).toBeGreaterThan(1);
      // Every excess (more than the limit inside, or a writer with anyone) came from a fault.
      expect(result.explainedOverlaps + result.toldOverlaps).toBe(result.overlaps);
      expect(result.outcomes.LockLostError).toBeGreaterThanOrEqual(2);
      if (kind === 'rw') {
        expect(result.staleWritesAccepted).toBe(0);
        expect(result.tokensOutOfOrder).toBe(0);
        expect(result.tokensHandedOutOfOrder).toBe(0);
      }
    },
    120_000,
  );

  it('keeps them over 5 RedLock masters through kill, stop and restarts of a minority and a majority', async () => {
    // The checker starts the 5 masters itself and stops them however the run ends.
    const result = await run({
      redlock: { masters: 5 },
      workers: 8,
      faults: ['kill', 'stop', 'minority', 'majority'],
    });

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

  it('lets somebody take the lock over 3 RedLock masters, one of them killed or hung, when everybody asks at one moment without waiting', async () => {
    const result = await run({
      redlock: { masters: 3 },
      workers: 8,
      faults: ['tick', 'tick'],
    });

    expect({
      violations: result.violations,
      faults: result.faultsByKind,
      ...safety(result),
      tokensHandedOutOfOrder: result.tokensHandedOutOfOrder,
      losses: result.tickLosses,
      rounds: result.tickRounds,
      // A round in which everybody was refused while nobody held the lock is a violation too.
      empty: result.tickRoundsEmpty,
    }).toEqual({
      violations: [],
      faults: { tick: 2 },
      ...SAFE,
      tokensHandedOutOfOrder: 0,
      losses: ['kill', 'stop'],
      rounds: 12,
      empty: 0,
    });
    expect(result.tickRoundsWon).toBe(12);
    expect(result.counter).toBe(result.acceptedWrites);
  }, 120_000);

  it('keeps them over ZooKeeper through kill, stop, a drain, a server restart and an expired session', async () => {
    const server = await ZooKeeperServer.start();
    try {
      const result = await run({
        zookeeper: { server },
        faults: ['kill', 'stop', 'drain', 'restart', 'expire'],
      });

      expect({
        violations: result.violations,
        faults: result.faultsByKind,
        processes: result.processes, // 6, plus the replacements of the killed and drained ones
        drainsKept: result.drainsKept,
        ...safety(result),
        // The cut-off holder was told within its validity and before anybody else acquired,
        // and its stale write was refused.
        ...losses(result),
      }).toEqual({
        violations: [],
        faults: { kill: 1, stop: 1, drain: 1, restart: 1, expire: 1 },
        processes: 8,
        drainsKept: 1,
        ...SAFE,
        ...allToldOf(1),
      });
      expect(result.counter).toBe(result.acceptedWrites);
      expect(result.acceptedWrites).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('hands the leadership of an election over on ZooKeeper through resign, SIGTERM, kill and SIGSTOP past the session', async () => {
    const server = await ZooKeeperServer.start();
    try {
      const result = await run({
        zookeeper: { server },
        faults: ['leader', 'leader', 'leader', 'leader'],
      });

      expect({
        violations: result.violations,
        faults: result.faultsByKind,
        ...safety(result),
        endings: result.leaderEndings,
      }).toEqual({
        violations: [],
        faults: { leader: 4 },
        ...SAFE,
        endings: ['resign', 'term', 'kill', 'stop'],
      });
      expect(result.leaderToldBeforeNext).toBeGreaterThanOrEqual(2);
      expect(result.leaderStaleWritesRefused).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it.each([
    ['a semaphore of 3 permits', { limit: 3 }],
    ['a read-write lock', 'rw'],
  ] as const)(
    'keeps %s within its bounds over ZooKeeper through kill, stop, a server restart and an expired session',
    async (_, kind) => {
      const server = await ZooKeeperServer.start();
      try {
        const result = await run({
          zookeeper: { server },
          kind,
          faults: ['kill', 'stop', 'restart', 'expire'],
        });

        expect(result.violations).toEqual([]);
        expect(result.faultsByKind).toEqual({ kill: 1, stop: 1, restart: 1, expire: 1 });
        expect(result.lostUpdates).toBe(0);
        expect(result.counter).toBe(result.acceptedWrites);
        expect(result.acceptedWrites).toBeGreaterThan(0);
        expect(result.mostInside).toBeGreaterThan(1);
        expect(result.explainedOverlaps + result.toldOverlaps).toBe(result.overlaps);
        if (kind === 'rw') {
          expect(result.staleWritesAccepted).toBe(0);
          expect(result.tokensOutOfOrder).toBe(0);
        }
      } finally {
        await server.stop();
      }
    },
    240_000,
  );

  it('keeps them on a ZooKeeper ensemble when a holder’s follower is cut off from the leader', async () => {
    const ensemble = await ZooKeeperEnsemble.start(3, {
      syncLimit: PARTITION_SYNC_LIMIT,
      partitionable: true,
    });
    try {
      const result = await run({
        zookeeper: { ensemble },
        faults: ['partition', 'expire', 'partition'],
      });

      expect({
        violations: result.violations,
        faults: result.faultsByKind,
        ...safety(result),
        // The follower still answered its clients when the next holder acquired: the window
        // was open, and the holder had been told before, within its validity; its stale write
        // was refused.
        stillServing: result.partitionStillServing,
        ...losses(result),
      }).toEqual({
        violations: [],
        faults: { partition: 2, expire: 1 },
        ...SAFE,
        stillServing: 2,
        ...allToldOf(3),
      });
      expect(result.counter).toBe(result.acceptedWrites);
      expect(result.acceptedWrites).toBeGreaterThan(0);
    } finally {
      await ensemble.stop();
    }
  }, 120_000);
});
