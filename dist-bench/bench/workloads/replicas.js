import { Redis } from 'ioredis';
import { ThisLibraryAdapter } from '../adapters/this-library.js';
import { CONFIG } from '../config.js';
import { BenchClients, closeClient } from '../redis/server.js';
import { redisServerOnPath, startServers } from '../redis/throwaway.js';
import { median, now, round, sleep } from '../stats.js';
import { runParallel, runUncontended, throughputRound, } from './throughput.js';
/** Ids of workload 9's two variants of this library, on the same master. */
export const WITHOUT_WAIT = 'nestjs-redis-lock:no-wait';
export const WITH_WAIT = 'nestjs-redis-lock:waitForReplicas';
/**
 * Workload 9: what `waitForReplicas` costs. Starts a master and a replica of it, then runs this
 * library on the master twice, without the option and with `CONFIG.replicas.waitForReplicas`:
 * - uncontended: one caller, acquire + release, the two taking turns op by op as in workloads 1
 *   and 8a, so that the machine's slow and fast stretches hit both alike;
 * - concurrent: `callers` loops on distinct keys, each variant alone in turn (as in workload 2),
 *   where concurrent acquisitions may share a WAIT.
 * The servers are stopped before this returns, also when it throws.
 */
export async function runReplicas(progress, besideRedisUrl) {
    if (!redisServerOnPath()) {
        return {
            skipped: 'redis-server is not on PATH: the replica and its master are started by the benchmark ' +
                '(REDIS_URL gives only one server)',
        };
    }
    const cfg = CONFIG.replicas;
    // Always the benchmark's own: it turns one of them into a replica of the other, which is
    // nothing to do to a server REDIS_URL names.
    const group = await startServers(2);
    try {
        const [master, replica] = group.servers;
        progress(`9. waitForReplicas: started a master on port ${master.port} and its replica on port ` +
            `${replica.port}`);
        // On the master, where INFO commandstats counts the WAITs; the replica gets a plain
        // connection of its own for its configuration and INFO.
        const clients = new BenchClients(master.url);
        const adapters = [];
        let replicaClient;
        try {
            await clients.connect();
            replicaClient = new Redis(replica.url);
            const syncMs = await replicate(clients.admin, replicaClient, master.port, cfg.syncTimeoutMs);
            progress(`9. Replica in sync after ${syncMs.toFixed(0)} ms`);
            adapters.push(await ThisLibraryAdapter.create(master.url, WITHOUT_WAIT));
            adapters.push(await ThisLibraryAdapter.create(master.url, WITH_WAIT, cfg.waitForReplicas));
            for (const adapter of adapters) {
                await throughputRound(adapter, 1, cfg.warmupMs, 'wr-warm:1');
                await throughputRound(adapter, cfg.concurrent.callers, cfg.warmupMs, 'wr-warm:n');
            }
            const bare = await bareWait(clients.admin, CONFIG.rttSamples);
            progress('9a. waitForReplicas uncontended');
            const uncontended = await runUncontended(adapters, 'wr-uncontended', cfg.uncontended);
            progress(`9b. waitForReplicas, ${cfg.concurrent.callers} concurrent callers`);
            const concurrent = await runParallel(adapters, clients, cfg.concurrent.callers, 'wr-concurrent', cfg.concurrent);
            const linkUpAtEnd = linkUp(await replicaClient.info('replication'));
            const byId = (results) => Object.fromEntries([...results].map(([adapter, value]) => [adapter.id, value]));
            return {
                servers: {
                    redis: await clients.redisVersion(),
                    besideRedisUrl,
                    syncMs: round(syncMs),
                    linkUpAtEnd,
                },
                waitForReplicas: cfg.waitForReplicas,
                implementations: adapters.map(({ id, name, waiting }) => ({ id, name, waiting })),
                bare,
                uncontended: byId(uncontended),
                concurrent: Object.fromEntries([...concurrent].map(([adapter, result]) => {
                    const ops = result.rounds.reduce((n, r) => n + r.ops, 0);
                    const waits = result.commands?.serverByName.wait ?? 0;
                    return [adapter.id, { ...result, waitsPerOp: round(waits / ops, 3) }];
                })),
            };
        }
        finally {
            for (const adapter of adapters) {
                await adapter
                    .close()
                    .catch((error) => progress(`While closing ${adapter.id}: ${String(error)}`));
            }
            if (replicaClient)
                await closeClient(replicaClient);
            await clients.close().catch((error) => progress(`While closing: ${String(error)}`));
        }
    }
    finally {
        await group.stop();
    }
}
/**
 * Makes `replica` a replica of the master on `masterPort` and waits for its first sync; returns
 * how long that took. `ThrowawayRedis` takes no extra arguments, so this is done over the
 * connections rather than with `--replicaof`. The sync is made diskless on both sides: the
 * servers run in the benchmark's working directory, and a disk-based sync would leave an RDB
 * file there (and the master's default 5 s wait for more replicas would stall the start).
 */
async function replicate(master, replica, masterPort, timeoutMs) {
    await master.config('SET', 'repl-diskless-sync', 'yes');
    await master.config('SET', 'repl-diskless-sync-delay', '0');
    // The replica is empty, so it may load the master's snapshot straight from the socket.
    await replica.config('SET', 'repl-diskless-load', 'on-empty-db');
    const start = now();
    await replica.call('REPLICAOF', '127.0.0.1', String(masterPort));
    const deadline = start + timeoutMs;
    const late = () => new Error(`the replica did not sync with its master within ${timeoutMs} ms`);
    while (!linkUp(await replica.info('replication'))) {
        if (now() > deadline)
            throw late();
        await sleep(20);
    }
    // Link up is not yet acknowledging: after a diskless sync the master streams writes to the
    // replica only once the replica's first ACK arrives (sent on its once-a-second cron), and a
    // WAIT before then times out with 0 replicas (seen with Redis 7.0: the first WAITs after the
    // sync). Measuring then would count a startup effect as the option's cost, so wait until a
    // write of our own is acknowledged.
    for (;;) {
        await master.set('bench:replica-probe', String(now()));
        if (Number(await master.wait(1, 200)) >= 1)
            break;
        if (now() > deadline)
            throw late();
    }
    await master.del('bench:replica-probe');
    return now() - start;
}
/** Medians of a bare SET and of the WAIT that follows it, `samples` times in sequence. */
async function bareWait(admin, samples) {
    const { replicas, timeout } = CONFIG.replicas.waitForReplicas;
    const sets = [];
    const waits = [];
    for (let i = 0; i < samples; i++) {
        const start = now();
        await admin.set('bench:bare-wait', String(i));
        const written = now();
        await admin.wait(replicas, timeout);
        waits.push(now() - written);
        sets.push(written - start);
    }
    await admin.del('bench:bare-wait');
    return { setMs: round(median(sets), 4), waitMs: round(median(waits), 4) };
}
const linkUp = (info) => /^master_link_status:up\r?$/m.test(info);
//# sourceMappingURL=replicas.js.map