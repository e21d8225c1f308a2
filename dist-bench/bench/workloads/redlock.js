import { RedlockAdapter } from '../adapters/redlock.js';
import { ThisLibraryAdapter } from '../adapters/this-library.js';
import { CONFIG } from '../config.js';
import { redisServerOnPath, startServers } from '../redis/throwaway.js';
import { MastersClients } from '../redis/server.js';
import { contendedRound, runContended } from './contended.js';
import { runUncontended, throughputRound } from './throughput.js';
/**
 * Ids of the implementations: `<lock>:<masters>`. The `:1` ones run on the first master alone
 * (not on the benchmark's main Redis), so that each RedLock is compared with a single node of
 * exactly the same kind, started the same way, measured in the same interleaved rounds.
 */
export const redlockId = (kind, masters) => `${kind === 'library' ? 'nestjs-redis-lock' : 'redlock'}:${masters}`;
/**
 * Workload 8: RedLock. Starts as many throwaway masters as the largest RedLock measured, then
 * runs this library and the `redlock` package on one of them and as a RedLock over the first
 * 3 and the first 5 of them:
 * - uncontended: one caller, acquire + release, the six implementations taking turns op by op
 *   as in workload 1 (so the machine's slow and fast stretches hit them alike); latency
 *   percentiles pooled over all rounds, ops/s the median round;
 * - contended: workload 3's read-modify-write counter under the lock, with its worker and
 *   section counts, each implementation in turn.
 * The masters are stopped before this returns, also when it throws.
 */
export async function runRedlock(progress, besideRedisUrl) {
    if (!redisServerOnPath()) {
        return {
            skipped: 'redis-server is not on PATH: RedLock needs independent masters, which the benchmark ' +
                'starts itself (REDIS_URL gives only one server)',
        };
    }
    const sizes = [1, ...CONFIG.redlock.masters];
    const count = Math.max(...sizes);
    // Always the benchmark's own, also when REDIS_URL is set: RedLock needs several masters that
    // nobody else writes to, and one external server cannot stand in for them.
    const masters = await startServers(count);
    try {
        const ports = masters.urls.map((url) => new URL(url).port).join(', ');
        progress(`8. RedLock: started ${count} throwaway redis-servers on 127.0.0.1 ports ${ports}` +
            (besideRedisUrl ? ' (REDIS_URL is set, but RedLock needs masters of its own)' : ''));
        const clients = new MastersClients(masters.urls);
        const adapters = [];
        const implementations = [];
        try {
            await clients.connect();
            const redis = await clients.redisVersion();
            const where = (n) => (n === 1 ? masters.urls[0] : masters.urls.slice(0, n));
            for (const kind of ['library', 'peer']) {
                for (const n of sizes) {
                    const adapter = kind === 'library'
                        ? await ThisLibraryAdapter.create(where(n), redlockId(kind, n))
                        : await RedlockAdapter.create('redlock', where(n), redlockId(kind, n));
                    adapters.push(adapter);
                    const { id, name, waiting } = adapter;
                    implementations.push({ id, name, waiting, kind, masters: n });
                }
            }
            // As for the other workloads: JIT, scripts loaded on every master, subscriber
            // connections open, before anything is measured.
            for (const adapter of adapters) {
                await throughputRound(adapter, 1, CONFIG.redlock.warmupMs, 'rl-warm:1');
                await contendedRound(adapter, clients, 'rl-warm:contended', 2, 3);
            }
            progress('8a. RedLock uncontended');
            const uncontended = await runUncontended(adapters, 'rl-uncontended', {
                rounds: CONFIG.redlock.uncontended.rounds,
                roundMs: CONFIG.redlock.uncontended.roundMs,
            });
            progress('8b. RedLock contended');
            const contended = await runContended(adapters, clients, CONFIG.redlock.contended, 'rl-contended');
            const byId = (results) => Object.fromEntries([...results].map(([adapter, value]) => [adapter.id, value]));
            return {
                masters: { count, redis, besideRedisUrl },
                implementations,
                uncontended: byId(uncontended),
                contended: byId(contended),
            };
        }
        finally {
            for (const adapter of adapters) {
                await adapter
                    .close()
                    .catch((error) => progress(`While closing ${adapter.id}: ${String(error)}`));
            }
            await clients.close().catch((error) => progress(`While closing: ${String(error)}`));
        }
    }
    finally {
        await masters.stop();
    }
}
//# sourceMappingURL=redlock.js.map