import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { CONFIG } from '../config.js';
import { addCounts, countExecuted } from '../redis/commands.js';
import type { BenchClients } from '../redis/server.js';
import { max, median, percentile, round, sum, systemNow } from '../stats.js';
import type { ContendedResult, ContendedRound } from './contended.js';

/** One critical section, timed in an instance process on the system-wide clock (`systemNow`). */
export interface InstanceSection {
  instance: number;
  /** When the worker called acquire. */
  requestedAt: number;
  /** When acquire resolved. */
  enteredAt: number;
  /** When the section's last write was answered, just before release was called. */
  leftAt: number;
}

/** What one instance did in one round. */
export interface InstanceRoundReport {
  sections: InstanceSection[];
  timeouts: number;
  releaseErrors: number;
  firstError?: string;
  /** When the worker's last release resolved. */
  endedAt: number;
}

/** What one instance's connections sent since a round began, counted in that process. */
export interface InstanceTally {
  /** By the implementation's connections (its subscriber included). */
  sent: number;
  sentByName: Map<string, number>;
  /** Pub/sub messages the implementation's connections received. */
  received: number;
  /** By the counter's connection, by name: to take out of Redis's counts. */
  work: Map<string, number>;
}

/** From the benchmark to an instance process (instance.ts). */
export type InstanceRequest =
  | { type: 'init'; url: string; ids: readonly string[]; instance: number }
  | {
      type: 'round';
      id: string;
      lockKey: string;
      counterKey: string;
      sections: number;
      /** `systemNow()` at which every instance starts, so that they all ask at once. */
      startAt: number;
    }
  | { type: 'tally'; id: string }
  | { type: 'close' };

/** From an instance process to the benchmark: one reply per request. */
export type InstanceReply =
  | { type: 'ready' }
  | { type: 'round'; report: InstanceRoundReport }
  | { type: 'tally'; tally: InstanceTally }
  | { type: 'closed' }
  | { type: 'error'; message: string };

type ReplyOf<T extends InstanceReply['type']> = Extract<InstanceReply, { type: T }>;

/**
 * One round, as workload 3 reports one: the makespan runs from the first acquire call to the
 * last release's answer over all instances; overlaps are sections that began before the
 * previous holder's had ended.
 */
export interface InstancesRound extends Omit<ContendedRound, 'waitsMs' | 'sectionsMs'> {
  /** What the instances' lock connections sent, by name (SUBSCRIBE and UNSUBSCRIBE among them). */
  sentByName: Record<string, number>;
  /** Pub/sub messages the instances' lock connections received. */
  received: number;
}

/** Workload 10's figures for one implementation; those named as workload 3's mean the same. */
export interface InstancesResult extends Pick<
  ContendedResult,
  | 'makespanMs'
  | 'sectionsPerSec'
  | 'waitP50Ms'
  | 'waitP99Ms'
  | 'waitMaxMs'
  | 'lostUpdates'
  | 'overlaps'
  | 'timeouts'
  | 'releaseErrors'
  | 'commands'
  | 'firstError'
> {
  instances: number;
  sectionsPerInstance: number;
  /** Median duration of this implementation's sections (GET, work, SET). */
  sectionMs: number;
  /**
   * Median handoff: from a holder's last write answered (its release about to be sent) to the
   * next holder's acquire resolving, over the handoffs to a caller that was already waiting.
   */
  handoffMs: number;
  /**
   * instances × (section + handoff): one turn of the lock around every instance, which is how
   * long a caller that joins the back of a FIFO queue waits.
   */
  fifoWaitMs: number;
  /**
   * Share of grants that went to the longest-waiting caller, in %: the caller had overtaken
   * nobody (a caller overtakes another when it called acquire after it and got the lock first).
   */
  inOrderPct: number;
  /** Most later callers that got the lock before one caller did, in one wait. */
  maxOvertaken: number;
  /** Requests the instances' connections sent (subscribers included), per section. */
  sentPerSection: number;
  /** Of those, SUBSCRIBE and UNSUBSCRIBE. */
  subscriptionsPerSection: number;
  /**
   * Pub/sub messages the instances received, per section: each instance has one subscriber,
   * so this is how many processes a release wakes (0 for the implementations that poll).
   */
  wokenPerSection: number;
  /** Commands Redis executed for the lock (INFO commandstats, inside scripts too), per section. */
  serverCommandsPerSection: number;
  sentByName: Record<string, number>;
  rounds: InstancesRound[];
}

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
export async function runInstances(
  ids: readonly string[],
  clients: BenchClients,
  url: string,
): Promise<Record<string, InstancesResult>> {
  const { rounds, instances, sections, warmupSections } = CONFIG.instances;
  const processes = await InstanceProcesses.start(url, ids, instances);
  try {
    for (const id of ids) await instancesRound(processes, clients, id, 'warm', warmupSections);
    const measured = new Map<string, { round: InstancesRound; sections: InstanceSection[] }[]>(
      ids.map((id) => [id, []]),
    );
    for (let r = 0; r < rounds; r++) {
      for (const id of ids) {
        measured.get(id)!.push(await instancesRound(processes, clients, id, `r${r}`, sections));
      }
    }
    return Object.fromEntries(
      ids.map((id) => [id, summarize(measured.get(id)!, instances, sections)]),
    );
  } finally {
    await processes.close();
  }
}

/**
 * One round of implementation `id` on the first `count` processes (all by default), each doing
 * `sections` sections on one key.
 */
export async function instancesRound(
  processes: InstanceProcesses,
  clients: BenchClients,
  id: string,
  label: string,
  sections: number,
  count = processes.size,
): Promise<{ round: InstancesRound; sections: InstanceSection[] }> {
  const counterKey = `bench:counter:instances:${id}:${label}`;
  await clients.work.set(counterKey, '0');
  const startAt = systemNow() + START_AHEAD_MS;
  let tallies: InstanceTally[] = [];
  const { result: reports, commands } = await countExecuted(
    clients,
    async () => {
      const replies = await processes.ask(
        () => ({ type: 'round', id, lockKey: LOCK_KEY, counterKey, sections, startAt }),
        'round',
        count,
      );
      return replies.map((reply) => reply.report);
    },
    async () => {
      tallies = (await processes.ask(() => ({ type: 'tally', id }), 'tally', count)).map(
        (reply) => reply.tally,
      );
      return {
        lock: sum(tallies.map((t) => t.sent)),
        benchmark: addByName(tallies.map((t) => t.work)),
      };
    },
  );
  const counter = Number(await clients.work.get(counterKey));
  await clients.work.del(counterKey);
  const all = reports.flatMap((report) => report.sections);
  const total = (pick: (r: InstanceRoundReport) => number) => sum(reports.map(pick));
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
      received: sum(tallies.map((t) => t.received)),
      firstError: reports.find((r) => r.firstError)?.firstError,
    },
    sections: all,
  };
}

function firstRequest(sections: readonly InstanceSection[]): number {
  return sections.reduce((first, s) => Math.min(first, s.requestedAt), Infinity);
}

/**
 * The sections in the order they held the lock: how many began before an earlier one had
 * ended (overlaps), and each handoff's time to a caller that was already waiting.
 */
function order(sections: readonly InstanceSection[]): { overlaps: number; handoffsMs: number[] } {
  const byEntry = [...sections].sort((a, b) => a.enteredAt - b.enteredAt);
  let overlaps = 0;
  const handoffsMs: number[] = [];
  let heldUntil = -Infinity;
  for (let k = 0; k < byEntry.length; k++) {
    const next = byEntry[k];
    if (next.enteredAt < heldUntil) overlaps++;
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
function overtakes(sections: readonly InstanceSection[]): { overtaken: number; jumped: boolean }[] {
  const overtook = (b: InstanceSection, a: InstanceSection) =>
    b.requestedAt > a.requestedAt && b.enteredAt < a.enteredAt;
  return sections.map((s) => ({
    overtaken: sections.filter((b) => overtook(b, s)).length,
    jumped: sections.some((a) => overtook(s, a)),
  }));
}

function summarize(
  own: readonly { round: InstancesRound; sections: InstanceSection[] }[],
  instances: number,
  sectionsPerInstance: number,
): InstancesResult {
  const rounds = own.map((o) => o.round);
  const all = own.flatMap((o) => o.sections);
  const waits = all.map((s) => s.enteredAt - s.requestedAt);
  const sectionMs = median(all.map((s) => s.leftAt - s.enteredAt));
  const handoffMs = median(own.flatMap((o) => order(o.sections).handoffsMs));
  // Per round: overtaking compares callers of the same round only.
  const overtaking = own.flatMap((o) => overtakes(o.sections));
  const completed = sum(rounds.map((r) => r.completed));
  const commands = addCounts(rounds.map((r) => r.commands));
  const sentByName = Object.fromEntries(
    addByName(rounds.map((r) => new Map(Object.entries(r.sentByName)))),
  );
  const subscriptions = (sentByName.subscribe ?? 0) + (sentByName.unsubscribe ?? 0);
  const total = (pick: (r: InstancesRound) => number) => sum(rounds.map(pick));
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
    wokenPerSection: round(total((r) => r.received) / completed, 2),
    serverCommandsPerSection: round(commands.server / completed),
    commands,
    sentByName,
    rounds,
    firstError: rounds.find((r) => r.firstError)?.firstError,
  };
}

function addByName(maps: readonly ReadonlyMap<string, number>[]): Map<string, number> {
  const total = new Map<string, number>();
  for (const map of maps) {
    for (const [name, calls] of map) total.set(name, (total.get(name) ?? 0) + calls);
  }
  return total;
}

/** The instance processes, each asked one thing at a time over IPC. */
export class InstanceProcesses {
  private constructor(private readonly children: readonly ChildProcess[]) {}

  get size(): number {
    return this.children.length;
  }

  /** Forks `count` instances and opens `ids` in each; kills them again if one fails. */
  static async start(url: string, ids: readonly string[], count: number) {
    const children = Array.from({ length: count }, () =>
      fork(INSTANCE_SCRIPT, [], {
        execArgv: [],
        serialization: 'advanced',
        // Their stdout onto our stderr: our stdout is the report.
        stdio: ['ignore', 2, 2, 'ipc'],
      }),
    );
    const processes = new InstanceProcesses(children);
    try {
      await processes.ask((instance) => ({ type: 'init', url, ids, instance }), 'ready');
    } catch (error) {
      for (const child of children) child.kill('SIGKILL');
      throw error;
    }
    return processes;
  }

  /**
   * Sends each of the first `count` instances its request and resolves with their replies, in
   * instance order.
   */
  ask<T extends InstanceReply['type']>(
    request: (instance: number) => InstanceRequest,
    expect: T,
    count = this.children.length,
  ): Promise<ReplyOf<T>[]> {
    return Promise.all(
      this.children.slice(0, count).map((child, i) => askOne(child, request(i), expect)),
    );
  }

  /** Asks each instance to close, and kills those that do not exit in time. */
  async close(): Promise<void> {
    await Promise.all(
      this.children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
        await askOne(child, { type: 'close' }, 'closed').catch(() => child.kill('SIGKILL'));
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}

function isReply<T extends InstanceReply['type']>(
  reply: InstanceReply,
  type: T,
): reply is ReplyOf<T> {
  return reply.type === type;
}

function askOne<T extends InstanceReply['type']>(
  child: ChildProcess,
  request: InstanceRequest,
  expect: T,
): Promise<ReplyOf<T>> {
  return new Promise((resolve, reject) => {
    const done = () => child.off('message', onMessage).off('exit', onExit);
    const onMessage = (reply: InstanceReply) => {
      done();
      if (isReply(reply, expect)) resolve(reply);
      else if (reply.type === 'error') reject(new Error(`instance ${child.pid}: ${reply.message}`));
      else reject(new Error(`instance ${child.pid} answered ${reply.type} to ${request.type}`));
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`instance ${child.pid} exited (${signal ?? `code ${code}`})`));
    };
    child.on('message', onMessage).on('exit', onExit);
    child.send(request);
  });
}
