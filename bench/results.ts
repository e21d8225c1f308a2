import type { CONFIG } from './config.js';
import type { MachineInfo } from './machine.js';
import type { Check } from './targets.js';
import type { BurstResult } from './workloads/burst.js';
import type { ContendedResult } from './workloads/contended.js';
import type { CurvesResult } from './workloads/curves.js';
import type { DecoratorResult } from './workloads/decorator.js';
import type { HeldResult } from './workloads/held-locks.js';
import type { InstancesResult } from './workloads/instances.js';
import type { ClientsResult } from './workloads/clients.js';
import type { RedlockResults, RedlockSkipped } from './workloads/redlock.js';
import type { ReplicasResults, ReplicasSkipped } from './workloads/replicas.js';
import type { ThroughputResult } from './workloads/throughput.js';

export interface ImplementationInfo {
  id: string;
  name: string;
  waiting: string;
}

/** Everything one run measured; written as JSON and rendered as markdown. */
export interface BenchResults {
  startedAt: string;
  durationS: number;
  machine: MachineInfo;
  /** REDIS_URL was used: another client may have added to the command counts. */
  externalRedis: boolean;
  config: typeof CONFIG;
  implementations: ImplementationInfo[];
  /** Id of the implementation the ratios of workloads 1 and 2 divide by. */
  floorId: string;
  /** Id of the implementation the burst's speed is judged against: SET NX retried at once. */
  spinFloorId: string;
  libraryId: string;
  /**
   * Median PING round trips measured in this run: each after a timer as long as the burst's
   * hold (used for the burst's ideal), and back-to-back.
   */
  rtt: { afterIdleMs: number; backToBackMs: number };
  uncontended: Record<string, ThroughputResult>;
  parallel: Record<string, ThroughputResult>;
  contended: Record<string, ContendedResult>;
  burst: Record<string, BurstResult>;
  /** Workload 10: separate instance processes on one key. */
  instances: Record<string, InstancesResult>;
  /** Workload 11: how throughput and waits grow with instances on one key and with keys. */
  curves: CurvesResult;
  decorator: DecoratorResult;
  held: HeldResult;
  /** Workload 8, on masters of its own; `skipped` when it could not run. */
  redlock: RedlockResults | RedlockSkipped;
  /** Workload 9, `waitForReplicas`, on a master and replica of its own; `skipped` likewise. */
  replicas: ReplicasResults | ReplicasSkipped;
  /** Workload 12: this library on each Redis client library. */
  clients?: ClientsResult;
  checklist: Check[];
  /** Mutual-exclusion violations (lost updates, overlaps): these make the run exit 1. */
  violations: string[];
}
