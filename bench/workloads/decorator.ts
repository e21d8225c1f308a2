import { decoratorWork, type ThisLibraryAdapter } from '../adapters/this-library.js';
import { CONFIG } from '../config.js';
import { median, now, round } from '../stats.js';

export interface DecoratorResult {
  decoratorOpsPerSec: number;
  usingOpsPerSec: number;
  /** The same work between a bare `acquire` and `release`: what both are compared with. */
  bareOpsPerSec: number;
  /** How much longer a decorated call takes than the same `using` call, in %. */
  overheadPct: number;
  /** How much longer a `using` call takes than bare acquire + work + release, in %. */
  usingOverBarePct: number;
  /** How much longer a decorated call takes than bare acquire + work + release, in %. */
  decoratorOverBarePct: number;
  /** Each round's overhead: their spread shows how much of the median is noise. */
  roundOverheadsPct: number[];
  /** Median latency of one call, µs. */
  decoratorP50Us: number;
  usingP50Us: number;
  bareP50Us: number;
  calls: number;
}

type Variant = 'decorator' | 'using' | 'bare';
const VARIANTS: readonly Variant[] = ['decorator', 'using', 'bare'];

/**
 * Workload 7: a `@WithLock('dec:<id>')` method against `LockService.using('dec:' + id)` and
 * against a bare `acquire` + `release` around the same work, one caller, the same key, so all
 * pay the same Redis round trips and only the wrappers' own work (key template, wrapper
 * dispatch, the reentrancy scope) differs.
 *
 * The three alternate call by call, in a rotating order, rather than in blocks: on a small VM a round
 * trip's latency swings by tens of % from one second to the next, far more than the few %
 * being measured, and only call-by-call alternation exposes both variants to the same swings.
 * Each round's overhead is its total time in decorated calls over its time in `using` calls;
 * the result is the median round.
 */
export async function runDecorator(library: ThisLibraryAdapter): Promise<DecoratorResult> {
  const id = '42';
  const variants: Record<Variant, () => Promise<unknown>> = {
    decorator: () => library.decorated.run(id),
    using: () => library.locks.using(`dec:${id}`, async () => decoratorWork(id)),
    bare: async () => {
      const lock = await library.locks.acquire(`dec:${id}`);
      try {
        return decoratorWork(id);
      } finally {
        await lock.release();
      }
    },
  };
  const latencies: Record<Variant, number[]> = { decorator: [], using: [], bare: [] };
  const rounds: (Record<Variant, number> & { calls: number })[] = [];
  for (let r = 0; r < CONFIG.decorator.rounds; r++) {
    const spent: Record<Variant, number> = { decorator: 0, using: 0, bare: 0 };
    let calls = 0;
    const until = now() + CONFIG.decorator.roundMs;
    while (now() < until) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + calls) % VARIANTS.length]);
      for (const variant of order) {
        const start = now();
        await variants[variant]();
        const took = now() - start;
        spent[variant] += took;
        latencies[variant].push(took);
      }
      calls++;
    }
    rounds.push({ ...spent, calls });
  }
  const total = (variant: Variant) => rounds.reduce((t, r) => t + r[variant], 0);
  const calls = rounds.reduce((n, r) => n + r.calls, 0);
  const overheads = (over: Variant, base: Variant) =>
    rounds.map((r) => (r[over] / r[base] - 1) * 100);
  return {
    decoratorOpsPerSec: round((calls / total('decorator')) * 1000),
    usingOpsPerSec: round((calls / total('using')) * 1000),
    bareOpsPerSec: round((calls / total('bare')) * 1000),
    overheadPct: round(median(overheads('decorator', 'using'))),
    usingOverBarePct: round(median(overheads('using', 'bare'))),
    decoratorOverBarePct: round(median(overheads('decorator', 'bare'))),
    roundOverheadsPct: overheads('decorator', 'using').map((o) => round(o, 1)),
    decoratorP50Us: round(median(latencies.decorator) * 1000, 1),
    usingP50Us: round(median(latencies.using) * 1000, 1),
    bareP50Us: round(median(latencies.bare) * 1000, 1),
    calls,
  };
}
