/**
 * The `tick` nemesis (RedLock): a master lost, and every worker asking for the lock at one
 * moment with `waitTimeout: 0`, as the replicas of a scheduled job do at each tick.
 *
 * The workers' own calls are paused first (each lets the one it is in settle), so that nobody
 * holds the lock. One master, drawn at random, is then lost: killed, or hung with SIGSTOP, in
 * turn. It is a minority of one, and the masters left are a majority, enough to grant the lock.
 * Then, {@link SafetyChecker.tickRounds} times, every worker is sent one start time on the
 * machine's shared clock and calls at that moment (see tick-contender.mjs); a winner runs its
 * critical section and releases. In each round at least one worker must get the lock: a round
 * in which every worker was refused while nobody held it is a lock that nobody could take (the
 * masters left each granted a different contender, and everyone withdrew: a split vote). At
 * most one may hold it at a time (the analysis's overlap checks, over the whole run). Then the
 * master is started again, empty, or woken, and the workers go on.
 */
import { sharedNow } from './first-attempts.mjs';

/**
 * @typedef {import('./checker.mjs').SafetyChecker} SafetyChecker
 * @typedef {import('./checker.mjs').Fault} Fault
 * @typedef {import('./checker.mjs').WorkerHandle} WorkerHandle
 * @typedef {import('./worker.mjs').WorkerMessage} WorkerMessage
 */
/**
 * One round: how many workers called, got the lock, were refused (by error), and how late after
 * the start time the last of them called.
 * @typedef {object} Round
 * @property {number} contenders
 * @property {number} won
 * @property {Record<string, number>} refused
 * @property {number} open sections not ended when the round began (none, with the calls paused)
 * @property {number} lateMs
 */

/** How the master is lost, in turn. */
export const MASTER_LOSSES = /** @type {const} */ (['kill', 'stop']);

/** How far ahead the start time of a round is sent, in ms: every worker has it by then. */
const LEAD_MS = 100;
/** Quiet time between rounds, in ms: the withdrawals of a split vote have gone out. */
const ROUND_GAP_MS = 150;

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the workers said of the pause and of their calls in the rounds. */
export class TickResults {
  constructor() {
    /** @type {Map<number, { worker: number, acquired: boolean, error?: string, lateMs: number }[]>} by round */
    this.rounds = new Map();
    this.nextRound = 1;
    /** How many faults ran, which picks the next way to lose the master. */
    this.count = 0;
  }

  /**
   * @param {WorkerHandle} worker
   * @param {WorkerMessage} message
   * @returns {boolean} whether the message was this nemesis's
   */
  onMessage(worker, message) {
    if (message?.type === 'paused') {
      worker.paused = true;
    } else if (message?.type === 'tickResult') {
      const { acquired, error, lateMs } = message;
      this.rounds.get(message.round)?.push({ worker: worker.id, acquired, error, lateMs });
    } else {
      return false;
    }
    return true;
  }
}

/**
 * Pauses the workers' calls, loses a master, runs the rounds and checks each, then brings the
 * master back and lets the workers go on.
 * @param {SafetyChecker} checker
 * @param {Fault} fault
 */
export async function tickRounds(checker, fault) {
  const results = checker.ticks;
  const servers = checker.lockServers;
  const how = MASTER_LOSSES[results.count++ % MASTER_LOSSES.length];
  const workers = checker.liveWorkers();
  for (const worker of workers) {
    worker.paused = false;
    worker.child.send({ type: 'pause' }, () => undefined);
  }
  const paused = await checker.waitFor(
    () => workers.every((worker) => worker.paused || worker.exited),
    20_000,
  );
  if (!paused) fault.problems.push('the workers did not pause their calls within 20 s');
  const [index] = servers.pick(1);
  const master = servers.servers[index];
  Object.assign(fault.facts, { master: how, index });
  /** @type {Round[]} */
  const rounds = [];
  try {
    if (how === 'kill') await master.kill?.();
    else if (master.pid) process.kill(master.pid, 'SIGSTOP');
    for (let i = 0; i < checker.tickRounds; i++) {
      rounds.push(await round(checker, fault, workers));
      await sleep(ROUND_GAP_MS);
    }
  } finally {
    if (how === 'kill') await master.restart();
    else if (master.pid) process.kill(master.pid, 'SIGCONT');
    for (const worker of workers) {
      worker.paused = false;
      worker.child.send({ type: 'resume' }, () => undefined);
    }
  }
  fault.facts.rounds = rounds;
  const empty = rounds.filter((r) => r.won === 0 && r.open === 0).length;
  if (empty > 0) {
    fault.problems.push(
      `in ${empty} of ${rounds.length} rounds every worker was refused while nobody held the ` +
        `lock (a master ${how === 'kill' ? 'killed' : 'hung'})`,
    );
  }
}

/**
 * One round: every worker calls at one moment; waits for all answers and for the winners'
 * sections to end.
 * @param {SafetyChecker} checker
 * @param {Fault} fault
 * @param {WorkerHandle[]} workers
 * @returns {Promise<Round>}
 */
async function round(checker, fault, workers) {
  const results = checker.ticks;
  const id = results.nextRound++;
  /** @type {{ worker: number, acquired: boolean, error?: string, lateMs: number }[]} */
  const answers = [];
  results.rounds.set(id, answers);
  const contenders = workers.filter((worker) => !worker.exited);
  const startSeq = checker.seq;
  const open = checker.sectionList.filter(
    (s) => s.releasedSeq === undefined && s.lostSeq === undefined && checker.workers.has(s.worker),
  ).length;
  const at = sharedNow() + LEAD_MS;
  for (const worker of contenders) worker.child.send({ type: 'tick', round: id, at });
  const answered = await checker.waitFor(() => answers.length >= contenders.length, 20_000);
  if (!answered) fault.problems.push(`round ${id}: not every worker answered within 20 s`);
  const ended = await checker.waitFor(
    () =>
      checker.sectionList.every((s) => s.acquiredSeq <= startSeq || s.releasedSeq !== undefined),
    15_000,
  );
  if (!ended) fault.problems.push(`round ${id}: a winner's section did not end within 15 s`);
  /** @type {Record<string, number>} */
  const refused = {};
  for (const answer of answers) {
    if (!answer.acquired) refused[answer.error ?? '?'] = (refused[answer.error ?? '?'] ?? 0) + 1;
  }
  return {
    contenders: contenders.length,
    won: answers.filter((answer) => answer.acquired).length,
    refused,
    open,
    lateMs: Math.round(Math.max(0, ...answers.map((answer) => answer.lateMs))),
  };
}

/**
 * The rounds' figures.
 * @param {SafetyChecker} checker
 */
export function analyzeTicks(checker) {
  const faults = checker.faults.filter((f) => f.kind === 'tick');
  const rounds = faults.flatMap((f) => /** @type {Round[]} */ (f.facts.rounds ?? []));
  /** @type {Record<string, number>} */
  const refused = {};
  for (const r of rounds) {
    for (const [error, n] of Object.entries(r.refused)) refused[error] = (refused[error] ?? 0) + n;
  }
  return {
    tickFaults: faults.length,
    tickLosses: faults.map((f) => f.facts.master),
    tickRounds: rounds.length,
    tickRoundsWon: rounds.filter((r) => r.won > 0).length,
    /** Rounds in which everybody was refused while nobody held the lock: violations. */
    tickRoundsEmpty: rounds.filter((r) => r.won === 0 && r.open === 0).length,
    tickWinners: rounds.map((r) => r.won),
    tickRefused: refused,
    tickLateMs: rounds.map((r) => r.lateMs),
  };
}

/**
 * The summary's line for the rounds, if any ran.
 * @param {ReturnType<typeof analyzeTicks>} r
 * @param {(values: unknown[]) => string} tally
 * @param {(values: unknown[], note?: string) => string} spread
 */
export function tickLines(r, tally, spread) {
  if (!r.tickFaults) return [];
  const refused = Object.entries(r.tickRefused)
    .map(([error, n]) => `${error} ${n}`)
    .join(', ');
  return [
    `  tick                   ${r.tickFaults} (master lost: ${tally(r.tickLosses)}): ` +
      `${r.tickRoundsWon}/${r.tickRounds} rounds won, ${r.tickRoundsEmpty} with everybody ` +
      `refused and nobody holding; winners per round ${tally(r.tickWinners)}; refusals ` +
      `${refused || 'none'}; last caller late by ${spread(r.tickLateMs, '')}`,
  ];
}
