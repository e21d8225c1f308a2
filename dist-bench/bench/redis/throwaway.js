import { redisServerOnPath, ThrowawayRedis } from '../../sample/demo/throwaway-redis.js';
export { redisServerOnPath };
/**
 * Every redis-server the benchmark started (through the demo's `ThrowawayRedis`, which spawns,
 * waits for PONG and stops them) and has not stopped yet. `ThrowawayRedis` runs each server in
 * a process group of its own, so that Ctrl-C reaches only the benchmark; the flip side is that
 * nothing else stops them when the benchmark dies, so this module keeps the list and kills
 * them on the way out.
 */
const live = new Set();
/** Starts under way: a server spawned but not yet answering is not in `live` yet. */
const starting = new Set();
/** Set once the process is on its way out: a server that comes up after that is killed at once. */
let killed = false;
/** Starts one throwaway server and keeps it on the list until {@link stopServer}. */
export async function startServer() {
    if (killed)
        throw new Error('the benchmark is stopping: no more redis-servers');
    // The check runs in the same callback that receives the server, so no kill can slip in
    // between a server coming up and its going on the list.
    const start = ThrowawayRedis.start().then((server) => {
        if (killed) {
            server.killNow();
            throw new Error('the benchmark stopped while a redis-server was starting');
        }
        live.add(server);
        return server;
    });
    starting.add(start);
    try {
        return await start;
    }
    finally {
        starting.delete(start);
    }
}
export async function stopServer(server) {
    try {
        await server.stop();
    }
    finally {
        live.delete(server);
    }
}
/**
 * Kills every server at once. Synchronous, so that it can run in a signal handler or in
 * `process.on('exit')`, where nothing asynchronous runs any more. Servers still starting are
 * killed as they come up; see {@link startsSettled}.
 */
export function killAllServers() {
    killed = true;
    for (const server of live)
        server.killNow();
    live.clear();
}
/**
 * Resolves once no start is under way (each ends within `ThrowawayRedis`'s 5 s PONG deadline).
 * After {@link killAllServers}, a signal handler awaits this before exiting, so that a server
 * spawned just before the signal is killed too rather than orphaned: `ThrowawayRedis` hands out
 * its process only once it answers.
 */
export async function startsSettled() {
    await Promise.allSettled([...starting]);
}
/** Whether a start is under way (then a signal handler should wait for {@link startsSettled}). */
export function serversStarting() {
    return starting.size > 0;
}
// Last resort: whatever ends the process (an uncaught error, process.exit in a signal handler),
// no redis-server of ours outlives it.
process.on('exit', killAllServers);
/**
 * Starts `count` independent servers on free loopback ports. One after the other, not at once:
 * each picks a port the kernel reports free, and only a server that already listens keeps the
 * next pick off its port; two concurrent starts could pick the same one, and the loser might
 * take the winner's PONG for its own. If one fails to start, the others are stopped again.
 */
export async function startServers(count) {
    const servers = [];
    const stop = async () => {
        await Promise.all(servers.map((server) => stopServer(server)));
    };
    try {
        for (let i = 0; i < count; i++)
            servers.push(await startServer());
    }
    catch (error) {
        await stop();
        throw error;
    }
    return { servers, urls: servers.map((server) => server.url), stop };
}
//# sourceMappingURL=throwaway.js.map