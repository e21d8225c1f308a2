import type { LockAdapter } from '../adapters/types.js';
import { CONFIG } from '../config.js';
import type { BenchClients } from '../redis/server.js';
import { median, now, percentile, round, sum } from '../stats.js';
import { InstanceProcesses, instancesRound, type InstanceSection } from './instances.js';

/** One point of a curve: one implementation at one size. */
export interface CurvePoint {
  /** Instances on the key, or distinct keys in flight. */
  size: number;
  /** Median of the rounds: sections (or acquire + release) per second. */
  opsPerSec: number;
  /** Waits (instances: acquire called → resolved) or acquire latencies (keys), over all rounds. */
  waitP50Ms: number;
  waitP99Ms: number;
  /** Lost updates and overlapping holders (instances only): must stay 0. */
  lostUpdates: number;
  overlaps: number;
  errors: number;
}

/** One curve per implementation, by id. */
export type Curve = Record<string, CurvePoint[]>;

export interface CurvesResult {
  /** Throughput and wait against the number of instance processes on one key. */
  instances: Curve;
  /**
   * Every wait of the instance curve at {@link CurvesResult.distributionAt} instances, sorted,
   * per implementation: the wait distributions the charts draw.
   */
  waitsAt: Record<string, number[]>;
  distributionAt: number;
  /** Throughput and acquire latency against the number of distinct keys in flight in one process. */
  keys: Curve;
}

/**
 * Workload 11, how cost grows. On one key: 1 to 32 instance processes of their own (as workload
 * 10 runs them), each implementation in turn at each size, about `sectionsPerPoint` sections per
 * round spread over the instances. On distinct keys: 1 to 1,024 callers in one process, each on
 * its own key, so that nobody ever waits and only the cost per lock grows. Rounds are
 * interleaved between implementations; the median round's throughput is kept, and waits are
 * pooled over the rounds.
 */
export async function runCurves(
  instanceIds: readonly string[],
  keyAdapters: readonly LockAdapter[],
  clients: BenchClients,
  url: string,
  progress: (message: string) => void,
): Promise<CurvesResult> {
  const { instanceSizes, keySizes, distributionAt } = CONFIG.curves;
  progress(`11a. Curve: ${instanceSizes.join(', ')} instances on one key`);
  const { instances, waitsAt } = await instanceCurve(instanceIds, clients, url, distributionAt);
  progress(`11b. Curve: ${keySizes.join(', ')} distinct keys in flight`);
  const keys = await keyCurve(keyAdapters);
  return { instances, waitsAt, distributionAt, keys };
}

async function instanceCurve(
  ids: readonly string[],
  clients: BenchClients,
  url: string,
  distributionAt: number,
): Promise<Pick<CurvesResult, 'instances' | 'waitsAt'>> {
  const { instanceSizes, instanceRounds, sectionsPerPoint } = CONFIG.curves;
  const processes = await InstanceProcesses.start(url, ids, Math.max(...instanceSizes));
  try {
    for (const id of ids) await instancesRound(processes, clients, id, 'curve:warm', 2);
    const instances: Curve = Object.fromEntries(ids.map((id) => [id, []]));
    const waitsAt: Record<string, number[]> = {};
    for (const size of instanceSizes) {
      const sections = Math.max(2, Math.ceil(sectionsPerPoint / size));
      const rounds = new Map<string, { perSec: number[]; sections: InstanceSection[] }>(
        ids.map((id) => [id, { perSec: [], sections: [] }]),
      );
      const lost = new Map<string, { lostUpdates: number; overlaps: number; errors: number }>(
        ids.map((id) => [id, { lostUpdates: 0, overlaps: 0, errors: 0 }]),
      );
      for (let r = 0; r < instanceRounds; r++) {
        for (const id of r % 2 === 0 ? ids : [...ids].reverse()) {
          const label = `curve:${size}:r${r}`;
          const { round: one, sections: all } = await instancesRound(
            processes,
            clients,
            id,
            label,
            sections,
            size,
          );
          rounds.get(id)!.perSec.push((one.completed / one.makespanMs) * 1000);
          rounds.get(id)!.sections.push(...all);
          const tally = lost.get(id)!;
          tally.lostUpdates += one.lostUpdates;
          tally.overlaps += one.overlaps;
          tally.errors += one.timeouts + one.releaseErrors;
        }
      }
      for (const id of ids) {
        const { perSec, sections: all } = rounds.get(id)!;
        const waits = all.map((s) => s.enteredAt - s.requestedAt);
        instances[id].push({
          size,
          opsPerSec: round(median(perSec)),
          waitP50Ms: round(percentile(waits, 50), 3),
          waitP99Ms: round(percentile(waits, 99), 3),
          ...lost.get(id)!,
        });
        if (size === distributionAt)
          waitsAt[id] = waits.sort((a, b) => a - b).map((w) => round(w, 3));
      }
    }
    return { instances, waitsAt };
  } finally {
    await processes.close();
  }
}

async function keyCurve(adapters: readonly LockAdapter[]): Promise<Curve> {
  const { keySizes, keyRounds, keyRoundMs } = CONFIG.curves;
  const curve: Curve = Object.fromEntries(adapters.map((a) => [a.id, []]));
  for (const size of keySizes) {
    const perSec = new Map<LockAdapter, number[]>(adapters.map((a) => [a, []]));
    const latencies = new Map<LockAdapter, number[]>(adapters.map((a) => [a, []]));
    const errors = new Map<LockAdapter, number>(adapters.map((a) => [a, 0]));
    for (let r = 0; r < keyRounds; r++) {
      for (let i = 0; i < adapters.length; i++) {
        const adapter = adapters[(i + r) % adapters.length];
        const result = await keysRound(adapter, size, keyRoundMs, `curve:keys:${size}:r${r}`);
        perSec.get(adapter)!.push(result.opsPerSec);
        latencies.get(adapter)!.push(...result.acquireMs);
        errors.set(adapter, errors.get(adapter)! + result.errors);
      }
    }
    for (const adapter of adapters) {
      const acquireMs = latencies.get(adapter)!;
      curve[adapter.id].push({
        size,
        opsPerSec: round(median(perSec.get(adapter)!)),
        waitP50Ms: round(percentile(acquireMs, 50), 3),
        waitP99Ms: round(percentile(acquireMs, 99), 3),
        lostUpdates: 0,
        overlaps: 0,
        errors: errors.get(adapter)!,
      });
    }
  }
  return curve;
}

/** `callers` loops of acquire + release for `durationMs`, each on its own key. */
async function keysRound(
  adapter: LockAdapter,
  callers: number,
  durationMs: number,
  label: string,
): Promise<{ opsPerSec: number; acquireMs: number[]; errors: number }> {
  const acquireMs: number[] = [];
  const ops: number[] = new Array<number>(callers).fill(0);
  let errors = 0;
  const start = now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: callers }, async (_, i) => {
      while (now() < deadline) {
        const asked = now();
        try {
          const handle = await adapter.acquire(`${label}:${i}`, CONFIG.ttl, CONFIG.waitMs);
          acquireMs.push(now() - asked);
          await adapter.release(handle);
          ops[i]++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { opsPerSec: (sum(ops) / (now() - start)) * 1000, acquireMs, errors };
}
