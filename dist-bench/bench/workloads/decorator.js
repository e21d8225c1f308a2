import { decoratorWork } from '../adapters/this-library.js';
import { CONFIG } from '../config.js';
import { median, now, round } from '../stats.js';
/**
 * Workload 7: a `@WithLock('dec:<id>')` method against `LockService.using('dec:' + id)` around
 * the same work, one caller, the same key, so both pay the same Redis round trips and only
 * the decorator's own work (key template, wrapper dispatch) differs.
 *
 * The two alternate call by call (A B, B A, …) rather than in blocks: on a small VM a round
 * trip's latency swings by tens of % from one second to the next, far more than the few %
 * being measured, and only call-by-call alternation exposes both variants to the same swings.
 * Each round's overhead is its total time in decorated calls over its time in `using` calls;
 * the result is the median round.
 */
export async function runDecorator(library) {
    const id = '42';
    const variants = {
        decorator: () => library.decorated.run(id),
        using: () => library.locks.using(`dec:${id}`, async () => decoratorWork(id)),
    };
    const latencies = { decorator: [], using: [] };
    const rounds = [];
    for (let r = 0; r < CONFIG.decorator.rounds; r++) {
        const spent = { decorator: 0, using: 0 };
        let calls = 0;
        const until = now() + CONFIG.decorator.roundMs;
        while (now() < until) {
            const order = calls % 2 === 0 ? ['decorator', 'using'] : ['using', 'decorator'];
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
    const total = (variant) => rounds.reduce((t, r) => t + r[variant], 0);
    const calls = rounds.reduce((n, r) => n + r.calls, 0);
    const overheads = rounds.map((r) => (r.decorator / r.using - 1) * 100);
    return {
        decoratorOpsPerSec: round((calls / total('decorator')) * 1000),
        usingOpsPerSec: round((calls / total('using')) * 1000),
        overheadPct: round(median(overheads)),
        roundOverheadsPct: overheads.map((o) => round(o, 1)),
        decoratorP50Us: round(median(latencies.decorator) * 1000, 1),
        usingP50Us: round(median(latencies.using) * 1000, 1),
        calls,
    };
}
//# sourceMappingURL=decorator.js.map