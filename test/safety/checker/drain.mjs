/**
 * The `drain` nemesis: a rolling deploy's SIGTERM to the worker inside the critical section.
 *
 * The holder's read goes through at once and its reply is held back for 2 to 3 TTLs after the
 * SIGTERM, so that its section outlasts its TTL while its app drains and only the watchdog's
 * renewals keep the lock. Its process must shut down as a deployed app does: finish the section
 * under the lock (nobody else acquires before its write, its signal does not abort, the fencing
 * guard accepts its write, `using` resolves), refuse its other callers and its new calls at
 * once (LockShuttingDownError: a refusal, never a failure) and then exit by itself, after which
 * a replacement is forked as for `kill`.
 */
import { randomInt } from './random.mjs';

/**
 * @typedef {import('./checker.mjs').SafetyChecker} SafetyChecker
 * @typedef {import('./checker.mjs').Fault} Fault
 * @typedef {import('./checker.mjs').Section} Section
 * @typedef {import('./worker.mjs').ReadRequest} ReadRequest
 */
/**
 * A call the library refused because its worker was shutting down.
 * @typedef {object} Refusal
 * @property {number} worker
 * @property {boolean} draining whether the worker had told the checker it was draining
 * @property {boolean} waiter whether the call was made before the SIGTERM (it was waiting)
 */

/** How long after its section the drained worker may take to exit, in ms. */
const EXIT_BOUND_MS = 10_000;

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * SIGTERMs the holder of `read`'s section and checks that it drains as it must.
 * @param {SafetyChecker} checker
 * @param {Fault} fault
 * @param {import('./checker.mjs').WorkerHandle} worker
 * @param {ReadRequest} read
 */
export async function drainHolder(checker, fault, worker, read) {
  const section = checker.section(worker.id, fault.token);
  if (!section) {
    fault.problems.push('the holder has no recorded section');
    checker.serveRead(worker, read);
    return;
  }
  const refusedBefore = checker.refusals.length;
  const readResult = checker.readResource(worker, read);
  worker.expectedExit = true;
  worker.child.kill('SIGTERM');
  const heard = await checker.waitFor(() => worker.drainingSeq !== undefined, 5_000);
  if (!heard) fault.problems.push('the worker did not report SIGTERM within 5 s');
  const heldMs = randomInt(2 * checker.ttl, 3 * checker.ttl);
  await sleep(heldMs);
  checker.reply(worker, read.requestId, readResult);
  const settled = await checker.waitFor(() => section.releasedSeq !== undefined, 15_000);
  const exited = await checker.waitFor(() => worker.exited, EXIT_BOUND_MS + 5_000);
  const refusals = checker.refusals.slice(refusedBefore).filter((r) => r.worker === worker.id);
  Object.assign(fault.facts, {
    heldMs,
    outcome: section.outcome,
    exitedAfterMs:
      exited && section.releasedAt !== undefined ? worker.exitedAt - section.releasedAt : undefined,
    exit: worker.exitStatus,
    refusedWaiters: refusals.filter((r) => r.waiter).length,
    refusedNewCalls: refusals.filter((r) => !r.waiter).length,
  });
  fault.problems.push(...drainProblems(checker, section, settled));
  if (!exited) fault.problems.push(`the draining worker did not exit within ${EXIT_BOUND_MS} ms`);
  else if (
    typeof fault.facts.exitedAfterMs === 'number' &&
    fault.facts.exitedAfterMs > EXIT_BOUND_MS
  ) {
    fault.problems.push(`the worker exited ${fault.facts.exitedAfterMs} ms after its section`);
  }
  // Its other callers were waiting or soon called again: each was refused at once.
  if (checker.callers > 1 && refusals.length === 0) {
    fault.problems.push('none of the draining worker’s other calls was refused');
  }
  fault.facts.kept = fault.problems.length === 0;
  await checker.spawnWorker().catch((/** @type {unknown} */ error) => {
    fault.problems.push(`replacement worker failed: ${String(error)}`);
  });
}

/**
 * What went wrong with the drained holder's section: it must have run to its end under its
 * lock, with nobody else let in before its write.
 * @param {SafetyChecker} checker
 * @param {Section} section
 * @param {boolean} settled whether `using` settled
 */
function drainProblems(checker, section, settled) {
  const problems = [];
  const intruder = checker.nextExcluded(section);
  const end = section.writeSeq ?? section.releasedSeq ?? Infinity;
  if (intruder && intruder.acquiredSeq < end) {
    problems.push(
      `worker ${intruder.worker} (token ${intruder.token}) acquired before the draining ` +
        `holder's section wrote`,
    );
  }
  if (section.lostSeq !== undefined) {
    problems.push(`the draining holder's signal aborted (${section.lostReason})`);
  }
  if (!settled) {
    problems.push('the draining holder did not finish its critical section within 15 s');
    return problems;
  }
  // A reader's write only marks where its read ends, and is never accepted: its read must be.
  if (section.share === 'read') {
    if (!section.readAccepted) problems.push("the draining reader's read was refused");
  } else if (!section.writeAccepted) {
    problems.push("the draining holder's write was refused");
  }
  if (section.outcome !== 'ok') {
    problems.push(`the draining holder's using() ended with ${section.outcome}, not ok`);
  }
  return problems;
}

/**
 * The drains' figures, and violations for refusals by a worker that was not shutting down.
 * @param {SafetyChecker} checker
 * @param {string[]} violations
 */
export function analyzeDrains(checker, violations) {
  const drains = checker.faults.filter((f) => f.kind === 'drain');
  const stray = checker.refusals.filter((r) => !r.draining);
  if (stray.length > 0) {
    violations.push(
      `${stray.length} calls refused as shutting down by workers that were not: ` +
        [...new Set(stray.map((r) => r.worker))].join(', '),
    );
  }
  const sum = (/** @type {string} */ name) =>
    drains.reduce((n, f) => n + (typeof f.facts[name] === 'number' ? f.facts[name] : 0), 0);
  return {
    drains: drains.length,
    /** Drained holders that finished their section under their lock and exited. */
    drainsKept: drains.filter((f) => f.facts.kept === true).length,
    drainHeldMs: drains.map((f) => f.facts.heldMs),
    drainExitedAfterMs: drains.map((f) => f.facts.exitedAfterMs),
    drainRefusedWaiters: sum('refusedWaiters'),
    drainRefusedNewCalls: sum('refusedNewCalls'),
    /** Every refusal of the run (LockShuttingDownError), none counted as a failure. */
    refusals: checker.refusals.length,
  };
}

/**
 * The summary's line for the drains, if any ran.
 * @param {ReturnType<typeof analyzeDrains>} r
 * @param {(values: unknown[], note?: string) => string} spread
 */
export function drainLines(r, spread) {
  if (!r.drains) return [];
  return [
    `  drain                  ${r.drains}: section finished under its lock and worker exited ` +
      `in ${r.drainsKept}/${r.drains} (held ${spread(r.drainHeldMs, '')} past SIGTERM; exited ` +
      `${spread(r.drainExitedAfterMs, '')} after it); refused while draining: ` +
      `${r.drainRefusedWaiters} waiting calls, ${r.drainRefusedNewCalls} new calls`,
  ];
}
