/**
 * The `leader` nemesis: every worker also stands in one leader election (`@Leader`, see
 * leader-candidate.mjs), and each fault ends the leader's term one way in turn: it resigns, it
 * is SIGTERMed (its shutdown steps down before the drain; a replacement is forked), it is
 * killed (SIGKILL; a replacement is forked), or it is paused (SIGSTOP) until another worker
 * leads and has written, then woken. Each time another worker must take over.
 *
 * Each leader writes to a fenced resource here with its epoch while it leads (and for a second
 * after its signal aborted). The history must show:
 * - epochs that grow from term to term, in the order the terms began on the machine's shared
 *   monotonic clock;
 * - every term told it ended (its signal aborted) before the next one began, on that clock,
 *   unless its worker could not know or tell: it was paused or killed during the term (by this
 *   nemesis or another fault), or the lock's Redis was restarted empty under it; or it was told
 *   its lease ran out at most {@link LATE_TIMER_SLACK_MS} late (a starved process's timer);
 * - a woken paused leader told it lost, and its writes after waking refused;
 * - no write of the latest term ever refused: only deposed leaders are.
 */
import { sharedNow } from './first-attempts.mjs';

/**
 * How late, after the next term began, a leader may be told that its lease ran out: its
 * watchdog's timer fired late, as a starved process's timers do on a loaded machine (the
 * library allows only the drift, 2 ms + 1% of the ttl, for that), which is a short pause. The
 * same slack as the lock's checks allow for a holder's (TOLD_SLACK_MS in checker.mjs).
 */
const LATE_TIMER_SLACK_MS = 250;

/** How the nemesis ends a term, in turn. */
export const LEADER_ENDINGS = /** @type {const} */ (['resign', 'term', 'kill', 'stop']);

/**
 * @typedef {object} Term
 * @property {number} worker
 * @property {number} epoch
 * @property {number} at when it began, on the shared clock
 * @property {number} [deposedAt] when its signal aborted, on that clock
 * @property {string} [reason]
 */

/** What the workers told of their terms, and the fenced resource they write to. */
export class LeaderHistory {
  constructor() {
    /** @type {Term[]} */
    this.terms = [];
    /** @type {{ worker: number, epoch: number, accepted: boolean, seq: number }[]} */
    this.writes = [];
    this.highest = 0;
    /** How many faults ran, which picks the next ending. */
    this.count = 0;
  }

  /**
   * @param {number} worker
   * @param {{ type: string, epoch?: number, at?: number, reason?: string }} message
   * @param {number} seq the checker's sequence number of the message
   * @returns {boolean} whether the message was the election's
   */
  onMessage(worker, message, seq) {
    const epoch = message.epoch ?? 0;
    if (message.type === 'lead') {
      this.terms.push({ worker, epoch, at: message.at ?? sharedNow() });
    } else if (message.type === 'deposed') {
      const term = this.term(worker, epoch);
      if (term && term.deposedAt === undefined) {
        term.deposedAt = message.at;
        term.reason = message.reason;
      }
    } else if (message.type === 'leaderWrite') {
      const accepted = epoch >= this.highest;
      if (accepted) this.highest = epoch;
      this.writes.push({ worker, epoch, accepted, seq });
    } else {
      return false;
    }
    return true;
  }

  /**
   * @param {number} worker
   * @param {number} epoch
   */
  term(worker, epoch) {
    return this.terms.find((t) => t.worker === worker && t.epoch === epoch);
  }

  /** The terms in the order they began. */
  ordered() {
    return [...this.terms].sort((a, b) => a.at - b.at);
  }

  /** @param {number} epoch the first term that began with a greater epoch, if any */
  after(epoch) {
    return this.ordered().find((t) => t.epoch > epoch);
  }
}

/**
 * Ends the current leader's term the next way in turn, and checks the takeover.
 * @param {import('./checker.mjs').SafetyChecker} checker
 * @param {import('./checker.mjs').Fault} fault
 */
export async function endLeadership(checker, fault) {
  const history = /** @type {LeaderHistory} */ (checker.leadership);
  const ending = LEADER_ENDINGS[history.count++ % LEADER_ENDINGS.length];
  fault.facts.ending = ending;
  /** @returns {Term | undefined} */
  const leading = () => {
    const last = history.ordered().at(-1);
    const worker = last && checker.workers.get(last.worker);
    return last && last.deposedAt === undefined && worker && !worker.stopped ? last : undefined;
  };
  if (!(await checker.waitFor(() => leading() !== undefined, 20_000))) {
    fault.problems.push('no worker led within 20 s');
    return;
  }
  const term = /** @type {Term} */ (leading());
  const worker = /** @type {import('./checker.mjs').WorkerHandle} */ (
    checker.workers.get(term.worker)
  );
  fault.worker = worker.id;
  // A killed or paused leader cannot tell anybody: it may take the mutex's section with it.
  fault.losesLock = ending === 'kill' || ending === 'stop';
  if (ending === 'resign') worker.child.send({ type: 'resign' }, () => undefined);
  else {
    if (ending === 'stop') worker.stopped = true;
    else worker.expectedExit = true;
    worker.child.kill(ending === 'term' ? 'SIGTERM' : ending === 'kill' ? 'SIGKILL' : 'SIGSTOP');
  }
  const replacement =
    ending === 'term' || ending === 'kill'
      ? checker.spawnWorker().catch((/** @type {unknown} */ error) => {
          fault.problems.push(`replacement worker failed: ${String(error)}`);
        })
      : undefined;
  if (!(await checker.waitFor(() => history.after(term.epoch) !== undefined, 20_000))) {
    fault.problems.push(`nobody led within 20 s after the leader's ${ending}`);
  } else {
    const next = /** @type {Term} */ (history.after(term.epoch));
    fault.facts.takeoverMs = Math.round(next.at - fault.startedHr);
    if (ending === 'stop') await wake(checker, fault, worker, term, next);
  }
  await replacement;
  if (ending === 'term' && !(await checker.waitFor(() => worker.exited, 20_000))) {
    fault.problems.push('the SIGTERMed leader did not exit within 20 s');
  }
}

/**
 * Wakes the paused leader once the next one has written: it must be told, and its writes
 * from then on refused.
 * @param {import('./checker.mjs').SafetyChecker} checker
 * @param {import('./checker.mjs').Fault} fault
 * @param {import('./checker.mjs').WorkerHandle} worker
 * @param {Term} term
 * @param {Term} next
 */
async function wake(checker, fault, worker, term, next) {
  const history = /** @type {LeaderHistory} */ (checker.leadership);
  await checker.waitFor(
    () => history.writes.some((w) => w.epoch >= next.epoch && w.accepted),
    10_000,
  );
  const wokenSeq = checker.seq;
  worker.child.kill('SIGCONT');
  worker.stopped = false;
  if (!(await checker.waitFor(() => term.deposedAt !== undefined, 10_000))) {
    fault.problems.push('the woken leader was never told it no longer leads');
  }
  const woken = () => history.writes.filter((w) => w.epoch === term.epoch && w.seq > wokenSeq);
  await checker.waitFor(() => woken().length > 0, 2_000);
  fault.facts.staleWrites = woken().length;
  if (woken().some((w) => w.accepted)) {
    fault.problems.push("the woken leader's write was accepted");
  }
}

/**
 * The election's figures, and its violations (see the top of this file).
 * @param {import('./checker.mjs').SafetyChecker} checker
 * @param {string[]} violations
 */
export function analyzeLeadership(checker, violations) {
  const history = checker.leadership;
  if (!history) return { leaderTerms: 0 };
  const terms = history.ordered();
  let toldBeforeNext = 0;
  let exempt = 0;
  /** @type {number[]} */
  const toldLateMs = [];
  terms.forEach((term, i) => {
    const next = terms[i + 1];
    if (i > 0 && term.epoch <= terms[i - 1].epoch) {
      violations.push(`leader epoch ${term.epoch} began after epoch ${terms[i - 1].epoch}`);
    }
    if (!next) return;
    if (couldNotTell(checker, term)) exempt++;
    else if (term.deposedAt !== undefined && term.deposedAt <= next.at) toldBeforeNext++;
    else if (
      term.deposedAt !== undefined &&
      term.deposedAt - next.at <= LATE_TIMER_SLACK_MS &&
      /validity ran out/.test(term.reason ?? '')
    ) {
      toldLateMs.push(Math.round(term.deposedAt - next.at));
    } else {
      violations.push(
        `leader epoch ${next.epoch} (worker ${next.worker}) began before epoch ${term.epoch} ` +
          `(worker ${term.worker}) was told it ended` +
          (term.deposedAt === undefined
            ? ' (never told)'
            : ` (told ${(term.deposedAt - next.at).toFixed(1)} ms later: ${term.reason})`),
      );
    }
  });
  const latest = Math.max(0, ...terms.map((term) => term.epoch));
  const refusedLatest = history.writes.filter((w) => !w.accepted && w.epoch >= latest).length;
  if (refusedLatest) violations.push(`${refusedLatest} writes of the latest leader were refused`);
  const faults = checker.faults.filter((f) => f.kind === 'leader');
  return {
    leaderTerms: terms.length,
    /** Handovers whose old leader was told before the next began, and those it could not be. */
    leaderToldBeforeNext: toldBeforeNext,
    leaderCouldNotTell: exempt,
    /** How late the leaders whose lease ran out under a late timer were told, in ms. */
    leaderToldLateMs: toldLateMs,
    leaderEndings: faults.map((f) => f.facts.ending),
    leaderTakeoverMs: faults.map((f) => f.facts.takeoverMs),
    leaderStaleWritesRefused: history.writes.filter((w) => !w.accepted).length,
    leaderWrites: history.writes.length,
  };
}

/**
 * Whether the term's worker could not know or tell that it ended: it was paused or killed
 * while it led, or the lock's Redis was restarted empty under it.
 * @param {import('./checker.mjs').SafetyChecker} checker
 * @param {Term} term
 */
function couldNotTell(checker, term) {
  const end = term.deposedAt ?? Infinity;
  const silenced = checker.signals.some(
    (s) =>
      s.worker === term.worker &&
      (s.signal === 'SIGSTOP' || s.signal === 'SIGKILL') &&
      s.at >= term.at &&
      s.at <= end,
  );
  return (
    silenced ||
    checker.faults.some(
      (f) =>
        f.kind === 'restart' &&
        !checker.zookeeper &&
        f.startedHr <= end &&
        (f.endedHr ?? Infinity) >= term.at,
    )
  );
}

/**
 * The summary's line for the election, if it ran.
 * @param {ReturnType<typeof analyzeLeadership>} r
 * @param {(values: unknown[], note?: string) => string} spread
 */
export function leaderLines(r, spread) {
  if (!r.leaderTerms || !('leaderEndings' in r)) return [];
  const endings = LEADER_ENDINGS.map(
    (ending) => `${(r.leaderEndings ?? []).filter((e) => e === ending).length} ${ending}`,
  ).join(', ');
  return [
    `  leader                 ${r.leaderTerms} terms (ends: ${endings}); ` +
      `told before the next began ${r.leaderToldBeforeNext}, could not be (paused, killed) ` +
      `${r.leaderCouldNotTell}, told late by a starved timer ${spread(r.leaderToldLateMs ?? [], '')}; takeover ${spread(r.leaderTakeoverMs ?? [], '')}; ` +
      `${r.leaderStaleWritesRefused}/${r.leaderWrites} writes refused as stale`,
  ];
}
