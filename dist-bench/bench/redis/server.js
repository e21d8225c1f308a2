import { Redis } from 'ioredis';
import { median, now, sleep } from '../stats.js';
import { CommandCounter, instrument } from './instrument.js';
import { redisServerOnPath, startServer, stopServer } from './throwaway.js';
/**
 * `REDIS_URL` if set, else a throwaway `redis-server` on a free loopback port with nothing
 * saved to disk. Never the default 127.0.0.1:6379, which may hold someone's data.
 */
export async function startRedis() {
    const given = process.env.REDIS_URL;
    if (given)
        return { url: given, external: true, stop: async () => { } };
    if (!redisServerOnPath()) {
        throw new Error('redis-server is not on PATH: install it (e.g. `sudo apt-get install redis-server`) ' +
            'or set REDIS_URL to a Redis the benchmark may use');
    }
    const server = await startServer();
    return { url: server.url, external: false, stop: () => stopServer(server) };
}
/**
 * The benchmark's own connections: `admin` reads INFO and times PINGs; `work` does the
 * critical sections' counter reads and writes and the PTTL sampling. `work` is counted, so that
 * its commands can be subtracted from the server's counts and only the lock's remain.
 */
export class BenchClients {
    url;
    admin;
    work;
    workCounter = new CommandCounter();
    constructor(url) {
        this.url = url;
        this.admin = new Redis(url, { lazyConnect: true });
        this.work = instrument(new Redis(url, { lazyConnect: true }), this.workCounter);
    }
    async connect() {
        try {
            await Promise.all([connectOrDrop(this.admin), connectOrDrop(this.work)]);
        }
        catch (error) {
            throw new Error(`Cannot reach Redis at ${redact(this.url)}`, { cause: error });
        }
    }
    async close() {
        await Promise.all([this.admin, this.work].map((client) => closeClient(client)));
    }
    async redisVersion() {
        const info = await this.admin.info('server');
        return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    }
    /** Calls per command name since the server started (Lua-internal calls included). */
    async commandStats() {
        return statsOf(this.admin);
    }
    /** Median PING round trip in ms, over `samples` sequential PINGs, each after `idleMs`. */
    async pingRtt(samples, idleMs) {
        const times = [];
        for (let i = 0; i < samples; i++) {
            if (idleMs > 0)
                await sleep(idleMs);
            const start = now();
            await this.admin.ping();
            times.push(now() - start);
        }
        return median(times);
    }
}
/**
 * The benchmark's connections to the RedLock masters: `admin` and `work` on the first master
 * (the contended workload's counter lives there), plus an INFO connection to each of the
 * others. `commandStats` adds up all masters, so that a workload's command counts are those of
 * the whole RedLock, whichever masters an implementation talks to.
 */
export class MastersClients extends BenchClients {
    urls;
    others;
    constructor(urls) {
        super(urls[0]);
        this.urls = urls;
        this.others = urls.slice(1).map((url) => new Redis(url, { lazyConnect: true }));
    }
    async connect() {
        await super.connect();
        try {
            await Promise.all(this.others.map((client) => connectOrDrop(client)));
        }
        catch (error) {
            throw new Error('Cannot reach a RedLock master', { cause: error });
        }
    }
    async close() {
        await Promise.all([super.close(), ...this.others.map((client) => closeClient(client))]);
    }
    async commandStats() {
        const perMaster = await Promise.all([
            super.commandStats(),
            ...this.others.map((client) => statsOf(client)),
        ]);
        const total = new Map();
        for (const stats of perMaster) {
            for (const [name, calls] of stats)
                total.set(name, (total.get(name) ?? 0) + calls);
        }
        return total;
    }
}
/** Calls per command name since the server started (Lua-internal calls included). */
async function statsOf(client) {
    const info = await client.info('commandstats');
    const stats = new Map();
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        stats.set(match[1].toLowerCase(), Number(match[2]));
    }
    return stats;
}
/** A connected ioredis client whose commands `counter` counts. */
export async function countedClient(url, counter) {
    const client = instrument(new Redis(url, { lazyConnect: true }), counter);
    await connectOrDrop(client);
    return client;
}
/**
 * Connects, or, when that fails, stops the client's reconnection attempts before rethrowing:
 * otherwise they would keep the process alive after the benchmark has given up.
 */
async function connectOrDrop(client) {
    try {
        await client.connect();
    }
    catch (error) {
        client.disconnect();
        throw error;
    }
}
/** QUIT politely; drop the connection if it is not in a state to answer. */
export async function closeClient(client) {
    await client.quit().catch(() => client.disconnect());
}
/** The URL without its password, for messages. */
function redact(url) {
    try {
        const parsed = new URL(url);
        if (parsed.password)
            parsed.password = '***';
        return parsed.toString();
    }
    catch {
        return '(an unparsable URL)';
    }
}
//# sourceMappingURL=server.js.map