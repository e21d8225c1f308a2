/**
 * The arrival-order check of fair mode (single Redis, mutex): the lock goes to the callers in
 * the order in which they took their places in the store's line, whatever their processes.
 *
 * A caller arrives when its first attempt is answered "not acquired": it is in line from then.
 * Times come from the workers, on the machine's monotonic clock, which every process shares
 * (see first-attempts.mjs), and each is a bound on the safe side: the answer is read after
 * Redis ran the attempt, and a call begins before its first attempt is sent. So when caller X's
 * first attempt was answered before caller Y even called, Redis queued X before Y, and Y may
 * not be granted the lock before X. A call whose first attempt the library answered itself,
 * without going to Redis (no place in line), arrived when its call returned: the first attempt
 * is synchronous up to the wait.
 *
 * Grants are ordered by the checker's sequence: under a mutex, a holder's `acquired` reaches
 * the checker before its read, so before its release, so before the next grant.
 *
 * Only calls that waited count (a first attempt that won takes nobody's place), and only calls
 * that were granted (one that timed out, failed or died has no grant to be out of order). Faults
 * reorder legitimately (a restarted Redis forgets the line; a stalled or stopped waiter loses
 * its place): an overtaking is a violation only when no fault was in flight while the overtaken
 * caller waited, other than one that must keep the order (a lost queue mark).
 */

/** How long after a fault ends its effects on the line may last, in ms (a handover lease and more). */
const AFTERMATH_MS = 1_000;
/** How many overtakings the violations describe one by one. */
const DESCRIBED = 5;

/**
 * @typedef {import('./checker.mjs').SafetyChecker} SafetyChecker
 * @typedef {import('./checker.mjs').Section} Section
 */

/**
 * Where `section`'s caller took its place in line, if it waited: a time on the shared clock.
 * @param {Section} section
 * @returns {number | undefined}
 */
function arrivalOf(section) {
  const call = section.call;
  if (!call) return undefined;
  const first = call.first;
  if (!first) return call.returnedAt;
  if (first.acquired !== false || first.answeredAt === undefined) return undefined;
  // Not this call's attempt after all: no arrival to trust.
  if (first.token !== section.lockToken) return undefined;
  return first.answeredAt;
}

/**
 * The arrival-order figures, and violations for overtakings in quiet phases.
 * @param {SafetyChecker} checker
 * @param {string[]} violations
 */
export function analyzeOrder(checker, violations) {
  const checked = checker.orderChecked;
  const sections = checked ? checker.sectionList : [];
  const faults = checker.faults
    .filter((f) => !f.keepsOrder)
    .map((f) => ({
      from: f.startedHr,
      to: (f.endedHr ?? Infinity) + AFTERMATH_MS,
    }));
  const troubled = (/** @type {number} */ from, /** @type {number} */ to) =>
    faults.some((f) => f.from <= to && f.to >= from);
  let waitedGrants = 0;
  let overtakenQuiet = 0;
  let overtakenInFaults = 0;
  /** The latest call among the waiters granted so far, and it. */
  let latest = { calledAt: -Infinity, section: /** @type {Section | undefined} */ (undefined) };
  for (const section of sections) {
    const arrival = arrivalOf(section);
    const call = section.call;
    if (arrival === undefined || !call) continue;
    waitedGrants++;
    const overtaker = latest.section;
    if (latest.calledAt > arrival && overtaker) {
      const grantedAt = section.acquiredHr ?? Infinity;
      if (troubled(arrival, grantedAt)) overtakenInFaults++;
      else if (++overtakenQuiet <= DESCRIBED) {
        violations.push(
          `worker ${section.worker} caller ${call.caller} (token ${section.token}) was in line ` +
            `${(latest.calledAt - arrival).toFixed(1)} ms before worker ${overtaker.worker} ` +
            `caller ${overtaker.call?.caller} called, which was granted the lock first ` +
            `(token ${overtaker.token})`,
        );
      }
    }
    if (call.calledAt > latest.calledAt) latest = { calledAt: call.calledAt, section };
  }
  if (overtakenQuiet > DESCRIBED) {
    violations.push(`${overtakenQuiet - DESCRIBED} more callers overtaken in quiet phases`);
  }
  const overtaken = overtakenQuiet + overtakenInFaults;
  return {
    orderChecked: checked,
    waitedGrants,
    /** Waiters granted after every caller that arrived after them (in per cent). */
    inArrivalOrderPct: waitedGrants ? (100 * (waitedGrants - overtaken)) / waitedGrants : 100,
    overtakenQuiet,
    overtakenInFaults,
    /** Calls whose first attempt did not go to Redis when they were made. */
    firstAttemptsNotSent: sections.filter((s) => s.call && !s.call.first).length,
  };
}

/**
 * The summary's line for the arrival order, when it was checked.
 * @param {ReturnType<typeof analyzeOrder>} r
 */
export function orderLines(r) {
  if (!r.orderChecked) return [];
  return [
    `  arrival order          ${r.inArrivalOrderPct.toFixed(2)}% of ${r.waitedGrants} waiters ` +
      `granted in arrival order; overtaken in quiet phases ${r.overtakenQuiet}, while a fault ` +
      `ran ${r.overtakenInFaults}; first attempts not sent at the call ${r.firstAttemptsNotSent}`,
  ];
}
