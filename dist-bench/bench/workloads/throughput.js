import { CONFIG } from '../config.js';
import { addCounts, countCommands } from '../redis/commands.js';
import { median, now, percentile, round } from '../stats.js';
const newTally = (latencies = false) => ({
    ops: 0,
    errors: 0,
    spentMs: 0,
    ...(latencies && { latenciesMs: [] }),
});
/** Acquire + release once; adds the time it took to `into` and counts the op or the error. */
async function oneOp(adapter, key, into) {
    const start = now();
    try {
        const handle = await adapter.acquire(key, CONFIG.ttl, CONFIG.waitMs);
        await adapter.release(handle);
        into.ops++;
        into.latenciesMs?.push(now() - start);
    }
    catch (error) {
        into.errors++;
        into.firstError ??= String(error);
    }
    into.spentMs += now() - start;
}
/**
 * `callers` concurrent loops of acquire + release for `durationMs`, caller `i` always on its
 * own key. No caller ever meets a held lock, so this measures the cost of the lock itself.
 */
export async function throughputRound(adapter, callers, durationMs, label) {
    const tally = newTally();
    const start = now();
    const deadline = start + durationMs;
    await Promise.all(Array.from({ length: callers }, async (_, i) => {
        while (now() < deadline)
            await oneOp(adapter, `${label}:${i}`, tally);
    }));
    const elapsedMs = now() - start;
    const { ops, errors, firstError } = tally;
    return { ops, elapsedMs, opsPerSec: (ops / elapsedMs) * 1000, errors, firstError };
}
function summarize(callers, own, sent, commands, firstError, latenciesMs) {
    const ops = own.reduce((n, r) => n + r.ops, 0);
    return {
        callers,
        opsPerSec: round(median(own.map((r) => r.opsPerSec))),
        sentCommandsPerOp: round(sent / ops),
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
export async function runUncontended(adapters, label, sizes = CONFIG.uncontended) {
    const rounds = new Map(adapters.map((a) => [a, []]));
    const latencies = new Map(adapters.map((a) => [a, []]));
    const sentBefore = new Map(adapters.map((a) => [a, a.counter.sent]));
    const firstErrors = new Map();
    for (let r = 0; r < sizes.rounds; r++) {
        const tallies = new Map(adapters.map((a) => [a, newTally(true)]));
        // Each implementation gets about `roundMs` of its own time per round.
        const until = now() + sizes.roundMs * adapters.length;
        for (let turn = 0; now() < until; turn++) {
            for (let i = 0; i < adapters.length; i++) {
                const adapter = adapters[(i + turn) % adapters.length];
                await oneOp(adapter, `${label}:r${r}`, tallies.get(adapter));
            }
        }
        for (const [adapter, tally] of tallies) {
            const { ops, errors, spentMs, firstError, latenciesMs = [] } = tally;
            const pooled = latencies.get(adapter);
            for (const ms of latenciesMs)
                pooled.push(ms);
            if (firstError && !firstErrors.has(adapter))
                firstErrors.set(adapter, firstError);
            rounds.get(adapter).push({
                ops,
                elapsedMs: spentMs,
                opsPerSec: (ops / spentMs) * 1000,
                errors,
            });
        }
    }
    return new Map(adapters.map((adapter) => [
        adapter,
        summarize(1, rounds.get(adapter), adapter.counter.sent - sentBefore.get(adapter), undefined, firstErrors.get(adapter), latencies.get(adapter)),
    ]));
}
/**
 * Workload 2: `callers` concurrent callers, each on its own key. Under this load both cores are
 * busy and the wake-up regimes of workload 1 matter less, so implementations run one at a time
 * (which also makes the server's command counts theirs), in rounds interleaved between them
 * with a rotating order; each keeps its median round.
 */
export async function runParallel(adapters, clients, callers, label, sizes = CONFIG.parallel) {
    const rounds = new Map(adapters.map((a) => [a, []]));
    const counts = new Map(adapters.map((a) => [a, []]));
    const firstErrors = new Map();
    for (let r = 0; r < sizes.rounds; r++) {
        const order = adapters.map((_, i) => adapters[(i + r) % adapters.length]);
        for (const adapter of order) {
            // INFO is read outside the timed loop; nothing is left in flight after it, so no settling.
            const { result: { firstError, ...result }, commands, } = await countCommands(clients, adapter.counter, () => throughputRound(adapter, callers, sizes.roundMs, `${label}:r${r}`), 0);
            if (firstError && !firstErrors.has(adapter))
                firstErrors.set(adapter, firstError);
            counts.get(adapter).push(commands);
            rounds.get(adapter).push(result);
        }
    }
    return new Map(adapters.map((adapter) => {
        const commands = addCounts(counts.get(adapter));
        return [
            adapter,
            summarize(callers, rounds.get(adapter), commands.sent, commands, firstErrors.get(adapter)),
        ];
    }));
}
//# sourceMappingURL=throughput.js.map