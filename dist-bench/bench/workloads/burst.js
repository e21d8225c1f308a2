import { CONFIG } from '../config.js';
import { addCounts, countCommands } from '../redis/commands.js';
import { max, median, now, percentile, round, sleep } from '../stats.js';
/**
 * Workload 4: `requests` one-shot callers ask for ONE key at the same instant; each holds it
 * for `holdMs` (a timer, like awaiting I/O) and releases. A perfect lock hands it from one to
 * the next in one round trip, so the makespan cannot beat requests × (hold + RTT).
 */
export async function burstRound(adapter, clients, label, requests = CONFIG.burst.requests) {
    const key = `${label}:lock`;
    const waitsMs = [];
    const holdsMs = [];
    let inside = 0;
    let overlaps = 0;
    let timeouts = 0;
    let releaseErrors = 0;
    let completed = 0;
    let firstError;
    let makespanMs = 0;
    const request = async (start) => {
        let handle;
        try {
            handle = await adapter.acquire(key, CONFIG.ttl, CONFIG.waitMs);
        }
        catch (error) {
            timeouts++;
            firstError ??= String(error);
            return;
        }
        const entered = now();
        waitsMs.push(entered - start);
        if (++inside > 1)
            overlaps++;
        await sleep(CONFIG.burst.holdMs);
        inside--;
        holdsMs.push(now() - entered);
        completed++;
        try {
            await adapter.release(handle);
        }
        catch (error) {
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
export async function runBurst(adapters, clients, rttMs) {
    const rounds = new Map(adapters.map((a) => [a, []]));
    for (let r = 0; r < CONFIG.burst.rounds; r++) {
        for (const adapter of adapters) {
            rounds.get(adapter).push(await burstRound(adapter, clients, `burst:r${r}`));
        }
    }
    const { requests } = CONFIG.burst;
    // One ideal for everyone: the hold is a timer whose length does not depend on the lock.
    const holdMs = median([...rounds.values()].flat().flatMap((r) => r.holdsMs));
    return new Map(adapters.map((adapter) => {
        const own = rounds.get(adapter);
        const waits = own.flatMap((r) => r.waitsMs);
        const completed = own.reduce((n, r) => n + r.completed, 0);
        const commands = addCounts(own.map((r) => r.commands));
        const total = (pick) => own.reduce((n, r) => n + pick(r), 0);
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
    }));
}
//# sourceMappingURL=burst.js.map