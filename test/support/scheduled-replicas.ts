import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { sharedRedisUrl, sleep, uniquePrefix } from './lock-app.js';

const REPLICA = fileURLToPath(new URL('./scheduled-replica.mjs', import.meta.url));
const CLOCK_OFFSET = fileURLToPath(new URL('./clock-offset.mjs', import.meta.url));
/** The replicas' schedule period, as in scheduled-replica.mjs. */
export const PERIOD = 2_000;

export interface Run {
  at: number;
  pid: number;
}

/** What three replicas did while they ran. */
export interface ReplicaRuns {
  /** The job's runs, in the order they started. */
  runs: Run[];
  /**
   * The clock-aligned ticks (`at / PERIOD`) that every replica was up for from well before
   * until well after, so that each should have run somewhere.
   */
  ticks: number[];
}

export interface ReplicaOptions {
  /** Replica i's wall clock runs `offsets[i]` ms off the machine's. */
  offsets?: number[];
  /** Called once every replica has booted, before the periods are counted. */
  afterBoot?: () => Promise<void>;
}

/**
 * Runs three replicas of one app (scheduled-replica.mjs), each a process with its own
 * connections, for `periods` periods of their schedule.
 */
export async function runReplicas(
  redis: Redis,
  env: Record<string, string>,
  periods: number,
  { offsets, afterBoot }: ReplicaOptions = {},
): Promise<ReplicaRuns> {
  const prefix = uniquePrefix();
  const runs = `${prefix}runs`;
  const replicas: ChildProcess[] = [];
  let from: number;
  let to: number;
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
    await afterBoot?.();
    from = Date.now();
    await sleep(periods * PERIOD);
    to = Date.now();
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
  // A replica fires up to its clock's offset early or late, and records its run a little after.
  const spread = Math.max(0, ...(offsets ?? []).map(Math.abs)) + 50;
  const ticks: number[] = [];
  for (let tick = Math.ceil((from + spread) / PERIOD); tick * PERIOD + spread + 500 <= to; tick++) {
    ticks.push(tick);
  }
  return {
    runs: entries.map((entry) => {
      const [at, pid] = entry.split(':').map(Number);
      return { at, pid };
    }),
    ticks,
  };
}

/** How many runs each tick had: first the ticks counted in `ticks` (0 if none), then others. */
export function runsPerTick({ runs, ticks }: ReplicaRuns): number[] {
  const counts = new Map<number, number>(ticks.map((tick) => [tick, 0]));
  for (const { at } of runs) {
    const tick = Math.round(at / PERIOD);
    counts.set(tick, (counts.get(tick) ?? 0) + 1);
  }
  return [...counts.values()];
}
