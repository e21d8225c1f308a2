import type { LockAdapter } from '../adapters/types.js';
import { CONFIG } from '../config.js';
import { addCounts, countCommands, type CommandCount } from '../redis/commands.js';
import type { BenchClients } from '../redis/server.js';
import { median, now, percentile, round } from '../stats.js';

export interface ThroughputRound {
  ops: number;
  /** Time the implementation's own operations took (for workload 1, its share of the round). */
  elapsedMs: number;
  opsPerSec: number;
  errors: number;
  /**
   * CPU time of this process (user + system, `process.cpuUsage()`) per acquire + release: the
   * lock's own JavaScript, its client library and the socket calls, Redis excluded (another
   * process).
   */
  nodeCpuUsPerOp: number;
}

export interface ThroughputResult {
  callers: number;
  /** Median of the rounds' ops/s. */
  opsPerSec: number;
  /** Commands its connections sent per acquire + release (a script call is one). */
  sentCommandsPerOp: number;
  /** Median of the rounds' Node CPU per acquire + release, in µs (see {@link ThroughputRound}). */
  nodeCpuUsPerOp: number;
  /**
   * Redis commands per acquire + release, including those run inside scripts (as in
   * workload 5). Workload 2 only: in workload 1 the implementations interleave, so the
   * server's counts cannot be told apart.
   */
  serverCommandsPerOp?: number;
  commands?: CommandCount;
  /**
   * Workload 1 only (one caller, so an op's time is its latency): acquire + release latency
   * percentiles over every successful op of every round.
   */
  latencyMs?: { p50: number; p99: number };
  rounds: ThroughputRound[];
  firstError?: string;
}

interface Tally {
  ops: number;
  errors: number;
  spentMs: number;
  /** Node CPU the ops took, in µs (workload 1: measured around each op). */
  cpuUs: number;
  firstError?: string;
  /** When kept: the duration of each successful op. */
  latenciesMs?: number[];
}

const newTally = (latencies = false): Tally => ({
  ops: 0,
  errors: 0,
  spentMs: 0,
  cpuUs: 0,
  ...(latencies && { latenciesMs: [] }),
});

/**
 * Acquire + release once; adds the time it took to `into` and counts the op or the error. With
 * `cpu`, also the Node CPU it took (one caller only: with several, their ops overlap).
 */
async function oneOp(adapter: LockAdapter, key: string, into: Tally, cpu = false): Promise<void> {
  const cpuStart = cpu ? process.cpuUsage() : undefined;
  const start = now();
  try {
    const handle = await adapter.acquire(key, CONFIG.ttl, CONFIG.waitMs);
    await adapter.release(handle);
    into.ops++;
    into.latenciesMs?.push(now() - start);
  } catch (error) {
    into.errors++;
    into.firstError ??= String(error);
  }
  into.spentMs += now() - start;
  if (cpuStart) {
    const spent = process.cpuUsage(cpuStart);
    into.cpuUs += spent.user + spent.system;
  }
}

/**
 * `callers` concurrent loops of acquire + release for `durationMs`, caller `i` always on its
 * own key. No caller ever meets a held lock, so this measures the cost of the lock itself.
 */
export async function throughputRound(
  adapter: LockAdapter,
  callers: number,
  durationMs: number,
  label: string,
): Promise<ThroughputRound & { firstError?: string }> {
  const tally = newTally();
  const cpuStart = process.cpuUsage();
  const start = now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: callers }, async (_, i) => {
      while (now() < deadline) await oneOp(adapter, `${label}:${i}`, tally);
    }),
  );
  const elapsedMs = now() - start;
  const cpu = process.cpuUsage(cpuStart);
  const { ops, errors, firstError } = tally;
  return {
    ops,
    elapsedMs,
    opsPerSec: (ops / elapsedMs) * 1000,
    errors,
    nodeCpuUsPerOp: (cpu.user + cpu.system) / Math.max(1, ops),
    firstError,
  };
}

function summarize(
  callers: number,
  own: ThroughputRound[],
  sent: number,
  commands: CommandCount | undefined,
  firstError: string | undefined,
  latenciesMs?: number[],
): ThroughputResult {
  const ops = own.reduce((n, r) => n + r.ops, 0);
  return {
    callers,
    opsPerSec: round(median(own.map((r) => r.opsPerSec))),
    sentCommandsPerOp: round(sent / ops),
    nodeCpuUsPerOp: round(median(own.map((r) => r.nodeCpuUsPerOp))),
    ...(commands && { serverCommandsPerOp: round(commands.server / ops), commands }),
    ...(latenciesMs && {
      latencyMs: {
        p50: round(percentile(latenciesMs, 50), 4),
        p99: round(percentile(latenciesMs, 99), 4),
      },
    }),
    rounds: own.map((r) => ({
      ...r,
      elapsedMs: round(r.elapsedMs),
      opsPerSec: round(r.opsPerSec),
      nodeCpuUsPerOp: round(r.nodeCpuUsPerOp),
    })),
    firstError,
  };
}

/**
 * Workload 1: one caller per implementation, acquire + release in sequence. Within a round the
 * implementations take turns op by op (in a rotating order), and each one's ops/s is its ops
 * over the time its own ops took. Why not one after the other: on a small VM a sequential
 * round trip flips between a fast and a slow regime (Redis and Node sharing a vCPU, or having
 * to wake each other's) for a second or so at a time, which swings ops/s by tens of % and
 * would decide which implementation "wins"; op-by-op turns expose all of them to the same
 * regimes. Nothing runs concurrently: each op is still alone on the wire.
 */
export async function runUncontended(
  adapters: readonly LockAdapter[],
  label: string,
  sizes: { rounds: number; roundMs: number } = CONFIG.uncontended,
): Promise<Map<LockAdapter, ThroughputResult>> {
  const rounds = new Map<LockAdapter, ThroughputRound[]>(adapters.map((a) => [a, []]));
  const latencies = new Map<LockAdapter, number[]>(adapters.map((a) => [a, []]));
  const sentBefore = new Map(adapters.map((a) => [a, a.counter.sent]));
  const firstErrors = new Map<LockAdapter, string>();
  for (let r = 0; r < sizes.rounds; r++) {
    const tallies = new Map(adapters.map((a) => [a, newTally(true)]));
    // Each implementation gets about `roundMs` of its own time per round.
    const until = now() + sizes.roundMs * adapters.length;
    for (let turn = 0; now() < until; turn++) {
      for (let i = 0; i < adapters.length; i++) {
        const adapter = adapters[(i + turn) % adapters.length];
        await oneOp(adapter, `${label}:r${r}`, tallies.get(adapter)!, true);
      }
    }
    for (const [adapter, tally] of tallies) {
      const { ops, errors, spentMs, cpuUs, firstError, latenciesMs = [] } = tally;
      const pooled = latencies.get(adapter)!;
      for (const ms of latenciesMs) pooled.push(ms);
      if (firstError && !firstErrors.has(adapter)) firstErrors.set(adapter, firstError);
      rounds.get(adapter)!.push({
        ops,
        elapsedMs: spentMs,
        opsPerSec: (ops / spentMs) * 1000,
        errors,
        nodeCpuUsPerOp: cpuUs / Math.max(1, ops),
      });
    }
  }
  return new Map(
    adapters.map((adapter) => [
      adapter,
      summarize(
        1,
        rounds.get(adapter)!,
        adapter.counter.sent - sentBefore.get(adapter)!,
        undefined,
        firstErrors.get(adapter),
        latencies.get(adapter),
      ),
    ]),
  );
}

/**
 * Workload 2: `callers` concurrent callers, each on its own key. Under this load both cores are
 * busy and the wake-up regimes of workload 1 matter less, so implementations run one at a time
 * (which also makes the server's command counts theirs), in rounds interleaved between them
 * with a rotating order; each keeps its median round.
 */
export async function runParallel(
  adapters: readonly LockAdapter[],
  clients: BenchClients,
  callers: number,
  label: string,
  sizes: { rounds: number; roundMs: number } = CONFIG.parallel,
): Promise<Map<LockAdapter, ThroughputResult>> {
  const rounds = new Map<LockAdapter, ThroughputRound[]>(adapters.map((a) => [a, []]));
  const counts = new Map<LockAdapter, CommandCount[]>(adapters.map((a) => [a, []]));
  const firstErrors = new Map<LockAdapter, string>();
  for (let r = 0; r < sizes.rounds; r++) {
    const order = adapters.map((_, i) => adapters[(i + r) % adapters.length]);
    for (const adapter of order) {
      // INFO is read outside the timed loop; nothing is left in flight after it, so no settling.
      const {
        result: { firstError, ...result },
        commands,
      } = await countCommands(
        clients,
        adapter.counter,
        () => throughputRound(adapter, callers, sizes.roundMs, `${label}:r${r}`),
        0,
      );
      if (firstError && !firstErrors.has(adapter)) firstErrors.set(adapter, firstError);
      counts.get(adapter)!.push(commands);
      rounds.get(adapter)!.push(result);
    }
  }
  return new Map(
    adapters.map((adapter) => {
      const commands = addCounts(counts.get(adapter)!);
      return [
        adapter,
        summarize(callers, rounds.get(adapter)!, commands.sent, commands, firstErrors.get(adapter)),
      ];
    }),
  );
}
