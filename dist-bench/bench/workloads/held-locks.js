import { CONFIG } from '../config.js';
import { countCommands } from '../redis/commands.js';
import { max, min, now, round, sleep } from '../stats.js';
const gc = globalThis.gc;
/** Whether heap figures are exact (node --expose-gc) or include garbage not yet collected. */
export const gcExposed = typeof gc === 'function';
/**
 * Live heap, after full collections when node runs with --expose-gc. The pause first lets
 * pending callbacks (late replies, timers) run, so that their garbage is collectable.
 */
async function heapUsed() {
    await sleep(20);
    for (let i = 0; i < 3; i++)
        gc?.();
    return process.memoryUsage().heapUsed;
}
/**
 * Fills `handles` (allocated before the baseline, so it does not count) with `n` locks, at
 * most `acquireConcurrency` in flight: a bounded queue is what a server under load looks like,
 * and it keeps ioredis's own buffers from growing with n.
 */
async function fill(handles, acquire) {
    let next = 0;
    await Promise.all(Array.from({ length: CONFIG.held.acquireConcurrency }, async () => {
        while (next < handles.length) {
            const i = next++;
            handles[i] = await acquire(i);
        }
    }));
}
async function drain(handles, release) {
    let next = 0;
    await Promise.all(Array.from({ length: CONFIG.held.acquireConcurrency }, async () => {
        while (next < handles.length)
            await release(handles[next++]);
    }));
}
/** Acquire n locks, measure the heap, optionally hold them for a while, release them all. */
async function holdMany(n, acquire, release, whileHeld = async () => { }) {
    const handles = new Array(n).fill(undefined);
    const baseline = await heapUsed();
    let start = now();
    await fill(handles, acquire);
    const acquireMs = now() - start;
    const held = await heapUsed();
    await whileHeld(handles);
    start = now();
    await drain(handles, release);
    const releaseMs = now() - start;
    // Drop our references, so that what remains is what the implementation itself kept.
    handles.fill(undefined);
    const after = await heapUsed();
    return {
        locks: n,
        acquireMs: round(acquireMs),
        releaseMs: round(releaseMs),
        heapPerLockBytes: round((held - baseline) / n, 1),
        heapAfterReleasePerLockBytes: round((after - baseline) / n, 1),
    };
}
/**
 * Workload 6: this library holding `locks` locks with the watchdog on for `periods` renewal
 * periods: heap per held lock, renewal traffic (from the server's counts and from the sends'
 * trace), and how close the sampled locks came to expiring. The floor holds as many bare
 * `SET NX PX` locks for the memory reference (and renews nothing).
 */
export async function runHeldLocks(library, floor, clients) {
    const { locks: n, ttl, periods, sampled, sampleEveryMs } = CONFIG.held;
    const periodMs = ttl / 3;
    let renewal;
    const libraryMemory = await holdMany(n, (i) => library.acquire(`held:${i}`, ttl, 0), (lock) => library.release(lock), async (handles) => {
        const sample = Array.from({ length: sampled }, (_, i) => handles[Math.floor((i * n) / sampled)]);
        const holdMs = periods * periodMs;
        const trace = library.counter.traceSends();
        let minPttl = Infinity;
        const holdStart = now();
        let holdEnd = holdStart;
        const { commands } = await countCommands(clients, library.counter, async () => {
            const until = now() + holdMs;
            while (now() < until) {
                const pttls = await Promise.all(sample.map((lock) => clients.work.pttl(lock.key)));
                minPttl = Math.min(minPttl, min(pttls));
                await sleep(sampleEveryMs);
            }
            holdEnd = now();
        }, 0);
        const sends = trace.stop();
        const ticks = groupSends(sends, holdStart);
        const seconds = (holdEnd - holdStart) / 1000;
        renewal = {
            ttlMs: ttl,
            periodMs: round(periodMs),
            holdMs: round(holdEnd - holdStart),
            lost: handles.filter((lock) => lock.signal.aborted).length,
            commands,
            evalshaPerSec: round((commands.serverByName.evalsha ?? 0) / seconds, 1),
            serverCommandsPerSec: round(commands.server / seconds, 1),
            ticks: ticks.length,
            scriptCallsPerTick: round(sends.length / Math.max(1, ticks.length)),
            roundTripsPerConnectionPerTick: round(max(ticks.map((tick) => tick.roundTrips / tick.connections))),
            tickDetail: ticks,
            connections: max(ticks.map((tick) => tick.connections)),
            pttl: {
                sampledLocks: sampled,
                everyMs: sampleEveryMs,
                minMs: minPttl,
                longestUnrenewedMs: ttl - minPttl,
                lagMs: ttl - minPttl - round(periodMs),
            },
        };
    });
    const floorMemory = await holdMany(n, (i) => floor.acquire(`held:${i}`, ttl), (handle) => floor.release(handle));
    return {
        gcExposed,
        library: { ...libraryMemory, renewal: renewal },
        floor: floorMemory,
    };
}
/**
 * Ticks: runs of sends separated by more than 100 ms of silence (the watchdog's ticks are
 * hundreds of ms apart).
 */
function groupSends(sends, since) {
    const groups = [];
    let lastAt = -Infinity;
    for (const send of sends) {
        if (send.at - lastAt > 100)
            groups.push([]);
        groups[groups.length - 1].push(send);
        lastAt = send.at;
    }
    return groups.map((group) => {
        const byName = {};
        for (const send of group)
            byName[send.name] = (byName[send.name] ?? 0) + 1;
        return {
            atMs: round(group[0].at - since),
            sends: group.length,
            connections: new Set(group.map((send) => send.connection)).size,
            roundTrips: new Set(group.map((send) => `${send.connection}:${send.roundTrip}`)).size,
            byName,
        };
    });
}
//# sourceMappingURL=held-locks.js.map