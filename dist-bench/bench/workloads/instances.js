import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { CONFIG } from '../config.js';
import { addCounts, countExecuted } from '../redis/commands.js';
import { max, median, percentile, round, sum, systemNow } from '../stats.js';
const INSTANCE_SCRIPT = fileURLToPath(new URL('./instance.js', import.meta.url));
/** One key for every round and the warm-up: each implementation prefixes it with its own. */
const LOCK_KEY = 'instances:lock';
/** How far ahead of a round's request its start is set, so that it reaches every process first. */
const START_AHEAD_MS = 50;
/** How long an instance may take to close before it is killed. */
const CLOSE_TIMEOUT_MS = 5_000;
/**
 * Workload 10: `instances` separate processes, each with its own connections for every
 * implementation (as N deployed apps are), one worker in each looping on workload 3's unsafe
 * increment under the lock on ONE key. Implementations take turns round by round on the same
 * processes and the same key; before its rounds, each runs a short warm-up round (scripts
 * loaded, subscriptions opened, as in an app that has been running). The processes are closed
 * before this returns, also when it throws.
 */
export async function runInstances(ids, clients, url) {
    const { rounds, instances, sections, warmupSections } = CONFIG.instances;
    const processes = await InstanceProcesses.start(url, ids, instances);
    try {
        for (const id of ids)
            await instancesRound(processes, clients, id, 'warm', warmupSections);
        const measured = new Map(ids.map((id) => [id, []]));
        for (let r = 0; r < rounds; r++) {
            for (const id of ids) {
                measured.get(id).push(await instancesRound(processes, clients, id, `r${r}`, sections));
            }
        }
        return Object.fromEntries(ids.map((id) => [id, summarize(measured.get(id), instances, sections)]));
    }
    finally {
        await processes.close();
    }
}
async function instancesRound(processes, clients, id, label, sections) {
    const counterKey = `bench:counter:instances:${id}:${label}`;
    await clients.work.set(counterKey, '0');
    const startAt = systemNow() + START_AHEAD_MS;
    let tallies = [];
    const { result: reports, commands } = await countExecuted(clients, async () => {
        const replies = await processes.ask(() => ({ type: 'round', id, lockKey: LOCK_KEY, counterKey, sections, startAt }), 'round');
        return replies.map((reply) => reply.report);
    }, async () => {
        tallies = (await processes.ask(() => ({ type: 'tally', id }), 'tally')).map((reply) => reply.tally);
        return {
            lock: sum(tallies.map((t) => t.sent)),
            benchmark: addByName(tallies.map((t) => t.work)),
        };
    });
    const counter = Number(await clients.work.get(counterKey));
    await clients.work.del(counterKey);
    const all = reports.flatMap((report) => report.sections);
    const total = (pick) => sum(reports.map(pick));
    return {
        round: {
            makespanMs: round(max(reports.map((r) => r.endedAt)) - firstRequest(all)),
            completed: all.length,
            counter,
            lostUpdates: all.length - counter,
            overlaps: order(all).overlaps,
            timeouts: total((r) => r.timeouts),
            releaseErrors: total((r) => r.releaseErrors),
            commands,
            sentByName: Object.fromEntries(addByName(tallies.map((t) => t.sentByName))),
            firstError: reports.find((r) => r.firstError)?.firstError,
        },
        sections: all,
    };
}
function firstRequest(sections) {
    return sections.reduce((first, s) => Math.min(first, s.requestedAt), Infinity);
}
/**
 * The sections in the order they held the lock: how many began before an earlier one had
 * ended (overlaps), and each handoff's time to a caller that was already waiting.
 */
function order(sections) {
    const byEntry = [...sections].sort((a, b) => a.enteredAt - b.enteredAt);
    let overlaps = 0;
    const handoffsMs = [];
    let heldUntil = -Infinity;
    for (let k = 0; k < byEntry.length; k++) {
        const next = byEntry[k];
        if (next.enteredAt < heldUntil)
            overlaps++;
        else if (k > 0 && next.requestedAt < byEntry[k - 1].leftAt) {
            handoffsMs.push(next.enteredAt - byEntry[k - 1].leftAt);
        }
        heldUntil = Math.max(heldUntil, next.leftAt);
    }
    return { overlaps, handoffsMs };
}
/**
 * Caller B overtakes caller A when B called acquire after A and got the lock before A. For each
 * section: how many later callers overtook its caller (`overtaken`), and whether its caller
 * overtook anybody, i.e. whether the lock went to someone other than the longest waiter.
 */
function overtakes(sections) {
    const overtook = (b, a) => b.requestedAt > a.requestedAt && b.enteredAt < a.enteredAt;
    return sections.map((s) => ({
        overtaken: sections.filter((b) => overtook(b, s)).length,
        jumped: sections.some((a) => overtook(s, a)),
    }));
}
function summarize(own, instances, sectionsPerInstance) {
    const rounds = own.map((o) => o.round);
    const all = own.flatMap((o) => o.sections);
    const waits = all.map((s) => s.enteredAt - s.requestedAt);
    const sectionMs = median(all.map((s) => s.leftAt - s.enteredAt));
    const handoffMs = median(own.flatMap((o) => order(o.sections).handoffsMs));
    // Per round: overtaking compares callers of the same round only.
    const overtaking = own.flatMap((o) => overtakes(o.sections));
    const completed = sum(rounds.map((r) => r.completed));
    const commands = addCounts(rounds.map((r) => r.commands));
    const sentByName = Object.fromEntries(addByName(rounds.map((r) => new Map(Object.entries(r.sentByName)))));
    const subscriptions = (sentByName.subscribe ?? 0) + (sentByName.unsubscribe ?? 0);
    const total = (pick) => sum(rounds.map(pick));
    return {
        instances,
        sectionsPerInstance,
        makespanMs: round(median(rounds.map((r) => r.makespanMs))),
        sectionsPerSec: round(median(rounds.map((r) => (r.completed / r.makespanMs) * 1000))),
        waitP50Ms: round(percentile(waits, 50)),
        waitP99Ms: round(percentile(waits, 99)),
        waitMaxMs: round(max(waits)),
        sectionMs: round(sectionMs, 3),
        handoffMs: round(handoffMs, 3),
        fifoWaitMs: round(instances * (sectionMs + handoffMs)),
        inOrderPct: round((overtaking.filter((o) => !o.jumped).length / overtaking.length) * 100, 1),
        maxOvertaken: max(overtaking.map((o) => o.overtaken)),
        lostUpdates: total((r) => r.lostUpdates),
        overlaps: total((r) => r.overlaps),
        timeouts: total((r) => r.timeouts),
        releaseErrors: total((r) => r.releaseErrors),
        sentPerSection: round(commands.sent / completed),
        subscriptionsPerSection: round(subscriptions / completed, 3),
        serverCommandsPerSection: round(commands.server / completed),
        commands,
        sentByName,
        rounds,
        firstError: rounds.find((r) => r.firstError)?.firstError,
    };
}
function addByName(maps) {
    const total = new Map();
    for (const map of maps) {
        for (const [name, calls] of map)
            total.set(name, (total.get(name) ?? 0) + calls);
    }
    return total;
}
/** The instance processes, each asked one thing at a time over IPC. */
class InstanceProcesses {
    children;
    constructor(children) {
        this.children = children;
    }
    /** Forks `count` instances and opens `ids` in each; kills them again if one fails. */
    static async start(url, ids, count) {
        const children = Array.from({ length: count }, () => fork(INSTANCE_SCRIPT, [], {
            execArgv: [],
            serialization: 'advanced',
            // Their stdout onto our stderr: our stdout is the report.
            stdio: ['ignore', 2, 2, 'ipc'],
        }));
        const processes = new InstanceProcesses(children);
        try {
            await processes.ask((instance) => ({ type: 'init', url, ids, instance }), 'ready');
        }
        catch (error) {
            for (const child of children)
                child.kill('SIGKILL');
            throw error;
        }
        return processes;
    }
    /** Sends each instance its request and resolves with their replies, in instance order. */
    ask(request, expect) {
        return Promise.all(this.children.map((child, i) => askOne(child, request(i), expect)));
    }
    /** Asks each instance to close, and kills those that do not exit in time. */
    async close() {
        await Promise.all(this.children.map(async (child) => {
            if (child.exitCode !== null || child.signalCode !== null)
                return;
            const exited = once(child, 'exit');
            const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
            await askOne(child, { type: 'close' }, 'closed').catch(() => child.kill('SIGKILL'));
            await exited;
            clearTimeout(timer);
        }));
    }
}
function isReply(reply, type) {
    return reply.type === type;
}
function askOne(child, request, expect) {
    return new Promise((resolve, reject) => {
        const done = () => child.off('message', onMessage).off('exit', onExit);
        const onMessage = (reply) => {
            done();
            if (isReply(reply, expect))
                resolve(reply);
            else if (reply.type === 'error')
                reject(new Error(`instance ${child.pid}: ${reply.message}`));
            else
                reject(new Error(`instance ${child.pid} answered ${reply.type} to ${request.type}`));
        };
        const onExit = (code, signal) => {
            done();
            reject(new Error(`instance ${child.pid} exited (${signal ?? `code ${code}`})`));
        };
        child.on('message', onMessage).on('exit', onExit);
        child.send(request);
    });
}
//# sourceMappingURL=instances.js.map