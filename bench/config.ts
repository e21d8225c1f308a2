/**
 * Sizes and durations of every workload, in one place so that the run stays under the issue's
 * 3-minute budget on a 2-core machine. `BENCH_QUICK=1` shrinks everything, for trying out
 * changes to the benchmark itself; its figures are too noisy to quote.
 */
const quick = process.env.BENCH_QUICK === '1';

export const CONFIG = {
  quick,
  /** TTL of the locks in workloads 1–4 and 7: long enough that no peer's refresh timer fires. */
  ttl: 10_000,
  /** How long a caller waits for a held lock: each peer is configured to wait about this long. */
  waitMs: 10_000,
  /** Workload 1: rounds in which implementations take turns op by op; median round kept. */
  uncontended: { rounds: quick ? 1 : 5, roundMs: quick ? 300 : 1_200 },
  /**
   * Workload 2: short rounds, implementations in turn, median round kept. Many short rounds
   * rather than a few long ones, so that every implementation samples the machine's slow and
   * fast stretches alike.
   */
  parallel: { callers: 64, rounds: quick ? 1 : 9, roundMs: quick ? 300 : 600 },
  /** Before measuring anything, each implementation runs a little of each workload. */
  warmup: { ms: quick ? 100 : 300, contendedWorkers: 2, contendedSections: 3 },
  /** Workload 3. */
  contended: { rounds: quick ? 1 : 3, workers: 8, sections: 25, workMs: 1 },
  /** Workload 4. */
  burst: { rounds: quick ? 1 : 3, requests: 50, holdMs: 2 },
  /**
   * Workload 10: `instances` processes, each an app with its own connections, one worker each
   * looping on workload 3's section on ONE key; implementations interleaved round by round,
   * median round kept. Each implementation first runs `warmupSections` per instance.
   */
  instances: { rounds: quick ? 1 : 3, instances: 8, sections: 25, warmupSections: 3 },
  /**
   * Workload 11, the curves: instance processes on one key (each implementation's round spreads
   * about `sectionsPerPoint` sections over them), and callers on distinct keys in one process.
   */
  curves: {
    instanceSizes: [1, 2, 4, 8, 16, 32],
    instanceRounds: quick ? 1 : 2,
    sectionsPerPoint: quick ? 16 : 64,
    /** The instance count whose wait distributions are charted. */
    distributionAt: 8,
    keySizes: [1, 4, 16, 64, 256, 1_024],
    keyRounds: quick ? 1 : 3,
    keyRoundMs: quick ? 200 : 400,
  },
  /** Workload 6. */
  held: {
    locks: quick ? 5_000 : 100_000,
    /** ttl 3 s: the watchdog renews every ttl / 3, so a renewal period is 1 s. */
    ttl: 3_000,
    periods: 3,
    /** Acquisitions in flight at once while filling up: keeps ioredis's queues small. */
    acquireConcurrency: 100,
    /** Locks whose PTTL is sampled during the hold, and how often. */
    sampled: 100,
    sampleEveryMs: 50,
  },
  /** Workload 7: rounds in which the two variants alternate call by call; median round kept. */
  decorator: { rounds: quick ? 3 : 9, roundMs: quick ? 300 : 1_000 },
  /**
   * Workload 8, RedLock: this library and the `redlock` package on 1, 3 and 5 independent
   * masters that the benchmark starts. About 30 s in all: the uncontended rounds interleave
   * six implementations (6 × rounds × roundMs), the contended rounds run each in turn, and
   * `redlock` polls every 200 ± 100 ms there.
   */
  redlock: {
    /** RedLock sizes measured; the largest is how many masters are started. */
    masters: [3, 5],
    warmupMs: quick ? 100 : 200,
    uncontended: { rounds: quick ? 1 : 5, roundMs: quick ? 200 : 450 },
    contended: { rounds: quick ? 1 : 3, workers: 8, sections: 25 },
  },
  /**
   * Workload 9, what `waitForReplicas` costs: this library on a master with one replica (both
   * started by the benchmark), with and without WAIT after each acquisition. About 10 s: two
   * implementations interleaved (2 × rounds × roundMs) alone, then with concurrent callers.
   */
  replicas: {
    /** The option as measured: one replica, and a timeout far above a loopback ack. */
    waitForReplicas: { replicas: 1, timeout: 100 },
    warmupMs: quick ? 100 : 300,
    uncontended: { rounds: quick ? 1 : 5, roundMs: quick ? 200 : 450 },
    /** Callers on distinct keys, so that WAITs can be shared but no lock is ever waited for. */
    concurrent: { callers: 16, rounds: quick ? 1 : 5, roundMs: quick ? 200 : 400 },
    /** Longest wait for the replica's first sync. */
    syncTimeoutMs: 10_000,
  },
  /** PING round trips sampled for the burst's ideal. */
  rttSamples: 100,
  /** Pause before reading INFO after a workload, so late replies and UNSUBSCRIBEs land in it. */
  settleMs: 100,
} as const;
