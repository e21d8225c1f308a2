import { CONFIG } from '../config.js';
import { addCounts, countCommands } from '../redis/commands.js';
import { max, median, now, percentile, round, sleep } from '../stats.js';
/**
 * The critical section of workloads 3 and 10: GET the counter, `workMs` of work (a timer, like
 * awaiting I/O), SET it to one more. Not atomic: only the lock keeps two of these apart, and a
 * break shows as a lost update.
 */
export async function unsafeIncrement(work, counterKey) {
    const value = Number(await work.get(counterKey));
    await sleep(CONFIG.contended.workMs);
    await work.set(counterKey, String(value + 1));
}
/**
 * Workload 3: `workers` loops on ONE key, each taking the lock `sections` times for a
 * deliberately non-atomic read-modify-write of a counter in Redis (GET, `workMs` of work, SET).
 * Any break in mutual exclusion shows as lost updates (and as overlaps, seen in-process).
 */
export async function contendedRound(adapter, clients, label, workers = CONFIG.contended.workers, sections = CONFIG.contended.sections) {
    const lockKey = `${label}:lock`;
    const counterKey = `bench:counter:${adapter.id}:${label}`;
    await clients.work.set(counterKey, '0');
    const waitsMs = [];
    const sectionsMs = [];
    let inside = 0;
    let overlaps = 0;
    let timeouts = 0;
    let releaseErrors = 0;
    let completed = 0;
    let firstError;
    let makespanMs = 0;
    const worker = async () => {
        for (let s = 0; s < sections; s++) {
            const requested = now();
            let handle;
            try {
                handle = await adapter.acquire(lockKey, CONFIG.ttl, CONFIG.waitMs);
            }
            catch (error) {
                timeouts++;
                firstError ??= String(error);
                continue;
            }
            const entered = now();
            waitsMs.push(entered - requested);
            if (++inside > 1)
                overlaps++;
            await unsafeIncrement(clients.work, counterKey);
            inside--;
            sectionsMs.push(now() - entered);
            completed++;
            try {
                await adapter.release(handle);
            }
            catch (error) {
                releaseErrors++;
                firstError ??= String(error);
            }
        }
    };
    const { commands } = await countCommands(clients, adapter.counter, async () => {
        const start = now();
        await Promise.all(Array.from({ length: workers }, worker));
        makespanMs = now() - start;
    });
    const counter = Number(await clients.work.get(counterKey));
    await clients.work.del(counterKey);
    return {
        makespanMs,
        completed,
        counter,
        lostUpdates: completed - counter,
        overlaps,
        timeouts,
        releaseErrors,
        waitsMs,
        sectionsMs,
        commands,
        firstError,
    };
}
export async function runContended(adapters, clients, sizes = CONFIG.contended, label = 'contended') {
    const { workers, sections } = sizes;
    const rounds = new Map(adapters.map((a) => [a, []]));
    for (let r = 0; r < sizes.rounds; r++) {
        for (const adapter of adapters) {
            rounds
                .get(adapter)
                .push(await contendedRound(adapter, clients, `${label}:r${r}`, workers, sections));
        }
    }
    // One ideal for everyone: the section's work does not depend on the lock around it.
    const sectionMs = median([...rounds.values()].flat().flatMap((r) => r.sectionsMs));
    return new Map(adapters.map((adapter) => {
        const own = rounds.get(adapter);
        const waits = own.flatMap((r) => r.waitsMs);
        const makespanMs = median(own.map((r) => r.makespanMs));
        const completed = own.reduce((n, r) => n + r.completed, 0);
        const commands = addCounts(own.map((r) => r.commands));
        const total = (pick) => own.reduce((n, r) => n + pick(r), 0);
        return [
            adapter,
            {
                workers,
                sectionsPerWorker: sections,
                makespanMs: round(makespanMs),
                sectionsPerSec: round(median(own.map((r) => (r.completed / r.makespanMs) * 1000))),
                waitP50Ms: round(percentile(waits, 50)),
                waitP99Ms: round(percentile(waits, 99)),
                waitMaxMs: round(max(waits)),
                sectionMs: round(sectionMs, 3),
                idealP99Ms: round(workers * sectionMs),
                lostUpdates: total((r) => r.lostUpdates),
                overlaps: total((r) => r.overlaps),
                timeouts: total((r) => r.timeouts),
                releaseErrors: total((r) => r.releaseErrors),
                serverCommandsPerAcquisition: round(commands.server / completed),
                sentCommandsPerAcquisition: round(commands.sent / completed),
                commands,
                rounds: own.map(({ waitsMs: _w, sectionsMs: _s, ...rest }) => ({
                    ...rest,
                    makespanMs: round(rest.makespanMs),
                })),
                firstError: own.find((r) => r.firstError)?.firstError,
            },
        ];
    }));
}
//# sourceMappingURL=contended.js.map