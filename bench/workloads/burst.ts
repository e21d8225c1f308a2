import type { LockAdapter } from '../adapters/types.js';
import { CONFIG } from '../config.js';
import { addCounts, countCommands, type CommandCount } from '../redis/commands.js';
import type { BenchClients } from '../redis/server.js';
import { max, median, now, percentile, round, sleep } from '../stats.js';

export interface BurstRound {
  makespanMs: number;
  completed: number;
  overlaps: number;
  timeouts: number;
  releaseErrors: number;
  waitsMs: number[];
  holdsMs: number[];
  commands: CommandCount;
  firstError?: string;
}

export interface BurstResult {
  requests: number;
  /** Median makespan over the rounds: from the burst until the last release resolved. */
  makespanMs: number;
  /** requests × (measured hold + one PING round trip): one round trip per handoff. */
  idealMs: number;
  /** Median time holders (of every implementation) held the lock for `holdMs` of work. */
  holdMs: number;
  rttMs: number;
  waitP50Ms: number;
  waitP99Ms: number;
  waitMaxMs: number;
  overlaps: number;
  timeouts: number;
  releaseErrors: number;
  serverCommandsPerAcquisition: number;
  sentCommandsPerAcquisition: number;
  commands: CommandCount;
  rounds: Omit<BurstRound, 'waitsMs' | 'holdsMs'>[];
  firstError?: string;
}

/**
 * Workload 4: `requests` one-shot callers ask for ONE key at the same instant; each holds it
 * for `holdMs` (a timer, like awaiting I/O) and releases. A perfect lock hands it from one to
 * the next in one round trip, so the makespan cannot beat requests × (hold + RTT).
 */
export async function burstRound(
  adapter: LockAdapter,
  clients: BenchClients,
  label: string,
  requests: number = CONFIG.burst.requests,
): Promise<BurstRound> {
  const key = `${label}:lock`;
  const waitsMs: number[] = [];
  const holdsMs: number[] = [];
  let inside = 0;
  let overlaps = 0;
  let timeouts = 0;
  let releaseErrors = 0;
  let completed = 0;
  let firstError: string | undefined;
  let makespanMs = 0;

  const request = async (start: number) => {
    let handle: unknown;
    try {
      handle = await adapter.acquire(key, CONFIG.ttl, CONFIG.waitMs);
    } catch (error) {
      timeouts++;
      firstError ??= String(error);
      return;
    }
    const entered = now();
    waitsMs.push(entered - start);
    if (++inside > 1) overlaps++;
    await sleep(CONFIG.burst.holdMs);
    inside--;
    holdsMs.push(now() - entered);
    completed++;
    try {
      await adapter.release(handle);
    } catch (error) {
      releaseErrors++;
      firstError ??= String(error);
    }
  };

  const { commands } = await countCommands(clients, adapter.counter, async () => {
    const start = now();
    await Promise.all(Array.from({ length: requests }, () => request(start)));
    makespanMs = now() - start;
  });
  return {
    makespanMs,
    completed,
    overlaps,
    timeouts,
    releaseErrors,
    waitsMs,
    holdsMs,
    commands,
    firstError,
  };
}

export async function runBurst(
  adapters: readonly LockAdapter[],
  clients: BenchClients,
  rttMs: number,
): Promise<Map<LockAdapter, BurstResult>> {
  const rounds = new Map<LockAdapter, BurstRound[]>(adapters.map((a) => [a, []]));
  for (let r = 0; r < CONFIG.burst.rounds; r++) {
    for (const adapter of adapters) {
      rounds.get(adapter)!.push(await burstRound(adapter, clients, `burst:r${r}`));
    }
  }
  const { requests } = CONFIG.burst;
  // One ideal for everyone: the hold is a timer whose length does not depend on the lock.
  const holdMs = median([...rounds.values()].flat().flatMap((r) => r.holdsMs));
  return new Map(
    adapters.map((adapter) => {
      const own = rounds.get(adapter)!;
      const waits = own.flatMap((r) => r.waitsMs);
      const completed = own.reduce((n, r) => n + r.completed, 0);
      const commands = addCounts(own.map((r) => r.commands));
      const total = (pick: (r: BurstRound) => number) => own.reduce((n, r) => n + pick(r), 0);
      return [
        adapter,
        {
          requests,
          makespanMs: round(median(own.map((r) => r.makespanMs))),
          idealMs: round(requests * (holdMs + rttMs)),
          holdMs: round(holdMs, 3),
          rttMs: round(rttMs, 3),
          waitP50Ms: round(percentile(waits, 50)),
          waitP99Ms: round(percentile(waits, 99)),
          waitMaxMs: round(max(waits)),
          overlaps: total((r) => r.overlaps),
          timeouts: total((r) => r.timeouts),
          releaseErrors: total((r) => r.releaseErrors),
          serverCommandsPerAcquisition: round(commands.server / completed),
          sentCommandsPerAcquisition: round(commands.sent / completed),
          commands,
          rounds: own.map(({ waitsMs: _w, holdsMs: _h, ...rest }) => ({
            ...rest,
            makespanMs: round(rest.makespanMs),
          })),
          firstError: own.find((r) => r.firstError)?.firstError,
        },
      ];
    }),
  );
}
