import { CONFIG } from '../config.js';
import { sleep, sum } from '../stats.js';
import { countDelta } from './instrument.js';
/**
 * Runs `fn` and counts the Redis commands it caused. Implementations run one at a time, so the
 * server-wide deltas belong to the one measured, once the benchmark's own commands are taken
 * out: the `work` connection's (counted on our side, by name) and INFO (by name: only the
 * benchmark sends it once connections are up).
 */
export async function countCommands(clients, lockCounter, fn, settleMs = CONFIG.settleMs) {
    const workBefore = clients.workCounter.snapshot();
    const sentBefore = lockCounter.sent;
    return countExecuted(clients, fn, () => ({
        lock: lockCounter.sent - sentBefore,
        benchmark: countDelta(workBefore, clients.workCounter.snapshot()),
    }), settleMs);
}
/**
 * {@link countCommands} for senders that count elsewhere (other processes): `sent` is asked,
 * after `fn` and the settling pause, what was sent meanwhile.
 */
export async function countExecuted(clients, fn, sent, settleMs = CONFIG.settleMs) {
    const serverBefore = await clients.commandStats();
    const result = await fn();
    // Let releases' late effects (an UNSUBSCRIBE, a cleanup) reach Redis before reading INFO.
    if (settleMs > 0)
        await sleep(settleMs);
    const { lock, benchmark } = await sent();
    const serverDelta = countDelta(serverBefore, await clients.commandStats());
    serverDelta.delete('info');
    for (const [name, calls] of benchmark) {
        serverDelta.set(name, (serverDelta.get(name) ?? 0) - calls);
    }
    return {
        result,
        commands: {
            server: sum([...serverDelta.values()]),
            sent: lock,
            serverByName: Object.fromEntries([...serverDelta].filter(([, calls]) => calls !== 0)),
        },
    };
}
export function addCounts(counts) {
    const byName = {};
    for (const count of counts) {
        for (const [name, calls] of Object.entries(count.serverByName)) {
            byName[name] = (byName[name] ?? 0) + calls;
        }
    }
    return {
        server: sum(counts.map((c) => c.server)),
        sent: sum(counts.map((c) => c.sent)),
        serverByName: byName,
    };
}
//# sourceMappingURL=commands.js.map