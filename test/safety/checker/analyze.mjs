/**
 * Checks a safety checker run from its history and formats the summary.
 *
 * All ordering comes from the checker's sequence numbers: the checker's process handles every
 * operation on the resource one at a time, so there is one total order and no clock skew. (The
 * arrival order alone compares times taken in the workers, on the one monotonic clock of the
 * machine: see arrival-order.mjs. The drains are checked in drain.mjs.)
 *
 * A section's resource interval runs from its read to its write (or to its release when it did
 * not write). Two intervals that overlap mean two holders were inside the critical section at
 * once: an overlap. Each overlap must be explained by a fault (the older holder was a fault's
 * victim, or held the lock while a fault ran), or by the older holder's validity running out
 * while it was inside (it was told: its signal aborted before the newer holder acquired; the
 * workers go on writing regardless, on purpose, as a paused or starved process would); and the
 * older (stale) holder must have been refused by the fencing guard, at its read or its write.
 * Only faults that can take a lock explain an overlap: not a RedLock `minority` fault that left
 * the lock on a majority, nor the faults aimed at waiters.
 *
 * Under a read-write lock, only a writer's interval must not overlap another's: readers share.
 * Under a semaphore, the check is on how many are inside: each section that comes in while
 * `limit` others are already inside is an excess, explained (or told) as an overlap is. Tokens
 * then order neither the accepted writes nor the acquisitions (several holders come in at
 * once), and no guard can refuse a stale permit (see FencedCounter).
 */

import { analyzeOrder, orderLines } from './arrival-order.mjs';
import { analyzeDrains, drainLines } from './drain.mjs';
import { analyzeForges, forgeLines } from './forge.mjs';
import { analyzeLeadership, leaderLines } from './leader.mjs';
import { analyzeTicks, tickLines } from './ticks.mjs';

/**
 * @typedef {import('./checker.mjs').Section} Section
 * @typedef {import('./checker.mjs').Fault} Fault
 */

/**
 * @param {import('./checker.mjs').SafetyChecker} checker
 * @param {number} elapsedMs
 */
export function analyze(checker, elapsedMs) {
  const violations = [...checker.violations];
  const log = checker.resource.log;
  const sections = checker.sectionList;

  // Fencing tokens strictly increase in the order writes were accepted; every accepted write
  // is the value before it plus one (no lost update), and no write below a token the resource
  // had already accepted gets in (recomputed here, independently of the guard's own state).
  const acceptedWrites = log.filter((e) => e.op === 'write' && e.accepted);
  let lastToken = 0;
  let lastValue = 0;
  let outOfOrder = 0;
  let chainBreaks = 0;
  const semaphore = checker.kind === 'semaphore';
  for (const write of acceptedWrites) {
    if (write.token <= lastToken && !semaphore) outOfOrder++;
    if (write.value !== lastValue + 1) chainBreaks++;
    lastToken = write.token;
    lastValue = write.value;
  }
  let highest = 0;
  let staleAccepted = 0;
  for (const entry of semaphore ? [] : log) {
    if (!entry.accepted || (entry.op === 'read' && !checker.resource.fenceReads)) continue;
    if (entry.token < highest && entry.op === 'write') staleAccepted++;
    highest = Math.max(highest, entry.token);
  }
  // Where a RedLock restart took the lock (a majority fault, or a minority one that hit a lock
  // held on too few masters), or a ZooKeeper session expired under it (its connection stalled,
  // or its follower cut off), its holder is checked as a stopped holder is.
  const lossFaults = checker.faults.filter(
    (f) =>
      (f.kind === 'minority' ||
        f.kind === 'majority' ||
        f.kind === 'expire' ||
        f.kind === 'partition') &&
      f.losesLock,
  );
  // Victims whose write the checker held back until a newer holder had written: theirs is
  // stale by construction.
  const staleVictims = new Set(
    [...checker.faults.filter((f) => f.kind === 'stop'), ...lossFaults].map((f) =>
      checker.section(f.worker, f.token),
    ),
  );
  if (!semaphore) {
    staleAccepted += sections.filter((s) => staleVictims.has(s) && s.writeAccepted).length;
  }
  const counter = checker.resource.value;
  const lostUpdates = acceptedWrites.length - counter;

  if (outOfOrder) violations.push(`${outOfOrder} accepted writes had a token not above the last`);
  if (chainBreaks) violations.push(`${chainBreaks} accepted writes were not previous value + 1`);
  if (lostUpdates !== 0) {
    violations.push(`counter ${counter} != ${acceptedWrites.length} accepted writes`);
  }
  if (staleAccepted) violations.push(`${staleAccepted} stale writes were accepted`);
  if (checker.duplicateTokens) {
    violations.push(`${checker.duplicateTokens} fencing tokens were handed out twice`);
  }
  // Tokens grow with every acquisition, not only with every accepted write: an acquisition
  // reaches the checker after every earlier holder's (each holder reports it before its first
  // read, which comes before its release), so a token at or below one seen before went back.
  // Under a read-write lock, only where a writer comes in: readers come in together. A lock
  // adopted from a handle keeps the fencing token it was handed off with: not below.
  let highestAcquired = 0;
  let highestWriter = 0;
  let tokensHandedOutOfOrder = 0;
  for (const s of semaphore ? [] : sections) {
    const floor = s.share === 'read' ? highestWriter : highestAcquired;
    if (s.adopted ? s.token < floor : s.token <= floor) tokensHandedOutOfOrder++;
    highestAcquired = Math.max(highestAcquired, s.token);
    if (s.share !== 'read') highestWriter = Math.max(highestWriter, s.token);
  }
  if (tokensHandedOutOfOrder) {
    violations.push(`${tokensHandedOutOfOrder} acquisitions got a token not above an earlier one`);
  }
  // A call whose lock Redis granted must be able to start its section under it, unless the
  // answer took about its TTL: validity counts from when the granting request was sent, so a
  // grant answered within half its TTL that had already expired was dated before its request.
  const expiredOnArrival = checker.grantedButLost.filter(
    (f) => f.how === 'expired' && (f.grantRttMs === undefined || f.grantRttMs >= f.ttl / 2),
  );
  const grantedButLost = checker.grantedButLost.filter((f) => !expiredOnArrival.includes(f));
  for (const failed of grantedButLost) {
    violations.push(
      `worker ${failed.worker} (ttl ${failed.ttl} ms) was granted the lock (answered in ` +
        `${failed.grantRttMs ?? '?'} ms) but its call failed before the section ran: ${failed.message}`,
    );
  }

  // Overlaps of resource intervals.
  // A killed holder's section never ends; under a semaphore its permit does, after its TTL
  // (test/engine/stopped-holders.spec.ts), and it counts as inside no longer than that.
  const intervals = sections
    .filter((s) => s.readSeq !== undefined && !(semaphore && s.fault === 'kill'))
    .map((s) => ({
      section: s,
      from: /** @type {number} */ (s.readSeq),
      to: s.writeSeq ?? s.releasedSeq ?? Infinity,
    }))
    .sort((a, b) => a.from - b.from);
  const takers = checker.faults.filter((f) => f.losesLock);
  const explainedBy = (/** @type {Section} */ s) =>
    takers.some(
      (f) =>
        (f.worker === s.worker && f.token === s.token) ||
        (s.acquiredSeq <= (f.endSeq ?? Infinity) && (s.releasedSeq ?? Infinity) >= f.startSeq),
    );
  let overlaps = 0;
  let explainedOverlaps = 0;
  let toldOverlaps = 0;
  /** @type {Set<Section>} */
  const staleHolders = new Set();
  if (semaphore) {
    /** @type {typeof intervals} */
    let inside = [];
    for (const interval of intervals) {
      inside = inside.filter((other) => other.to > interval.from);
      if (inside.length >= checker.limit) {
        overlaps++;
        const fresh = interval.section;
        const explained = inside.find(({ section }) => explainedBy(section));
        const told = inside.find(
          ({ section }) => section.lostSeq !== undefined && section.lostSeq < fresh.acquiredSeq,
        );
        if (explained) explainedOverlaps++;
        else if (told) toldOverlaps++;
        else {
          violations.push(
            `${inside.length + 1} holders inside a semaphore of limit ${checker.limit}: ` +
              `workers ${[...inside.map(({ section }) => section.worker), fresh.worker].join(', ')}`,
          );
        }
        const stale = (explained ?? told ?? inside[0]).section;
        staleHolders.add(stale);
      }
      inside.push(interval);
    }
  }
  for (let i = 0; i < (semaphore ? 0 : intervals.length); i++) {
    for (let j = i + 1; j < intervals.length && intervals[j].from < intervals[i].to; j++) {
      const [a, b] = [intervals[i].section, intervals[j].section];
      if (a.share === 'read' && b.share === 'read') continue;
      overlaps++;
      const [stale, fresh] = a.token < b.token ? [a, b] : [b, a];
      const where = `workers ${stale.worker} (token ${stale.token}) and ${fresh.worker} (token ${fresh.token})`;
      staleHolders.add(stale);
      if (explainedBy(stale)) explainedOverlaps++;
      else if (stale.lostSeq !== undefined && stale.lostSeq < fresh.acquiredSeq) toldOverlaps++;
      else violations.push(`overlap without a fault: ${where}`);
      if (stale.readAccepted && stale.writeAccepted) {
        violations.push(`overlap where the stale holder's write was accepted: ${where}`);
      }
    }
  }

  const drains = analyzeDrains(checker, violations);
  const leadership = analyzeLeadership(checker, violations);
  const forges = analyzeForges(checker, violations);
  const ticks = analyzeTicks(checker);
  const order = analyzeOrder(checker, violations);

  const faultsByKind = /** @type {Record<string, number>} */ ({});
  for (const kind of checker.faultPlan) faultsByKind[kind] = 0;
  for (const fault of checker.faults)
    faultsByKind[fault.kind] = (faultsByKind[fault.kind] ?? 0) + 1;
  for (const kind of new Set(checker.faultPlan)) {
    if (!faultsByKind[kind]) violations.push(`no ${kind} fault was injected`);
  }

  const outcomes = /** @type {Record<string, number>} */ ({});
  for (const s of sections) {
    const outcome = s.outcome ?? (s.fault === 'kill' ? 'killed' : 'unfinished');
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }
  const stopFaults = checker.faults.filter((f) => f.kind === 'stop');
  const killFaults = checker.faults.filter((f) => f.kind === 'kill');
  const restartFaults = checker.faults.filter((f) => f.kind === 'restart');
  const minorityFaults = checker.faults.filter((f) => f.kind === 'minority');
  const lagFaults = checker.faults.filter((f) => f.kind === 'lag');
  const partitionFaults = checker.faults.filter((f) => f.kind === 'partition');
  const killWaiterFaults = checker.faults.filter((f) => f.kind === 'kill-waiter');
  const shortTtlFaults = checker.faults.filter((f) => f.kind === 'short-ttl');
  const unmarkFaults = checker.faults.filter((f) => f.kind === 'unmark');
  const staleTurnFaults = checker.faults.filter((f) => f.kind === 'stale-turn');
  const clockBackFaults = checker.faults.filter((f) => f.kind === 'clock-back');
  const fact = (/** @type {Fault[]} */ faults, /** @type {string} */ name) =>
    faults.map((f) => f.facts[name]);
  const total = (/** @type {Fault[]} */ faults, /** @type {string} */ name) =>
    faults.reduce((sum, f) => sum + (typeof f.facts[name] === 'number' ? f.facts[name] : 0), 0);

  return {
    ok: violations.length === 0,
    violations,
    elapsedMs,
    redlock: checker.redlock,
    masters: checker.masterCount,
    quorum: Math.floor(checker.masterCount / 2) + 1,
    processes: checker.processesStarted,
    /**
     * Sections whose lock went to a caller of the same process as the section before (with
     * several callers per worker: the same-process handover).
     */
    sameProcessHandovers: sections.filter(
      (section, i) => i > 0 && sections[i - 1].worker === section.worker,
    ).length,
    workersAtOnce: checker.workerCount,
    ttl: checker.ttl,
    kind: checker.kind === 'semaphore' ? `semaphore (limit ${checker.limit})` : checker.kind,
    /** The most sections inside at once (readers and writers alike). */
    mostInside: mostInside(intervals),
    fenceReads: checker.resource.fenceReads,
    sections: sections.length,
    acceptedWrites: acceptedWrites.length,
    counter,
    lostUpdates,
    staleWritesRejected: log.filter((e) => e.op === 'write' && !e.accepted).length,
    staleReadsRejected: log.filter((e) => e.op === 'read' && !e.accepted).length,
    staleWritesAccepted: staleAccepted,
    overlaps,
    explainedOverlaps,
    /** Overlaps whose older holder had been told its lock was lost before the newer acquired. */
    toldOverlaps,
    staleHolders: staleHolders.size,
    staleHoldersRefused: [...staleHolders].filter((s) => !(s.readAccepted && s.writeAccepted))
      .length,
    tokensOutOfOrder: outOfOrder,
    tokensHandedOutOfOrder,
    faultsByKind,
    outcomes,
    acquireFailures: checker.acquireFailures,
    killTakeoverMs: killFaults.map((f) => f.facts.takeoverAfterKillMs),
    stopAbortBeforeWrite: stopFaults.filter((f) => f.facts.signalAbortedAtWrite === true).length,
    stopFaults: stopFaults.length,
    restartLostReasons: restartFaults.map((f) => f.facts.lostReason),
    // RedLock: the quorum-th PTTL bound of each kill, and its takeover's margin above it.
    killBoundMs: fact(killFaults, 'freeBoundMs'),
    killMarginMs: killFaults.map((f) =>
      typeof f.facts.takeoverAfterKillMs === 'number' && typeof f.facts.freeBoundMs === 'number'
        ? f.facts.takeoverAfterKillMs - f.facts.freeBoundMs
        : undefined,
    ),
    minorityFaults: minorityFaults.length,
    minoritySurvivable: minorityFaults.filter((f) => !f.losesLock).length,
    minorityKept: minorityFaults.filter((f) => f.facts.kept === true).length,
    minorityLostToSlowRenewals: minorityFaults.filter((f) => f.facts.lostToSlowRenewals).length,
    /** On how many masters the lock was when each minority fault struck. */
    minorityHoldingBefore: fact(minorityFaults, 'holdingBefore'),
    lossFaults: lossFaults.length,
    lossTold: lossFaults.filter((f) => typeof f.facts.toldMs === 'number').length,
    lossToldMs: fact(lossFaults, 'toldMs'),
    lossToldBeforeNext: lossFaults.filter((f) => f.facts.toldBeforeNext === true).length,
    lossNextAcquiredMs: fact(lossFaults, 'nextAcquiredMs'),
    lossStaleWriteRefused: lossFaults.filter((f) => f.facts.staleWriteRefused === true).length,
    lossLockLost: lossFaults.filter((f) => f.facts.outcome === 'LockLostError').length,
    restartMs: fact(
      checker.faults.filter((f) => f.kind === 'minority' || f.kind === 'majority'),
      'restartMs',
    ),
    partitionFaults: partitionFaults.length,
    /** Partitions whose follower still served its clients when the next holder acquired. */
    partitionStillServing: partitionFaults.filter((f) => f.facts.stillServingWhenTaken === true)
      .length,
    grantedButLost: grantedButLost.length,
    /** Grants whose answer came too late to use them: `usable()` refused them, as it must. */
    expiredOnArrival: expiredOnArrival.length,
    expiredOnArrivalRttMs: expiredOnArrival.map((f) => f.grantRttMs),
    // The faults aimed at the waiters of the fair handover.
    lagFaults: lagFaults.length,
    lagDelayMs: fact(lagFaults, 'delayMs'),
    lagLateChunks: total(lagFaults, 'lateChunks'),
    lagStalls: total(lagFaults, 'stalls'),
    lagLongStalls: total(lagFaults, 'longStalls'),
    lagSections: total(lagFaults, 'sections'),
    lagLaggedSections: total(lagFaults, 'laggedSections'),
    lagMaxGapMs: fact(lagFaults, 'maxGapMs'),
    killWaiterFaults: killWaiterFaults.length,
    killWaiterVictims: total(killWaiterFaults, 'victims'),
    /** The longest time the key stayed unused while others waited, after each kill-waiter. */
    deadWaiterGapMs: fact(killWaiterFaults, 'gapMs'),
    shortTtlFaults: shortTtlFaults.length,
    shortTtlSections: total(shortTtlFaults, 'sections'),
    shortTtlWaitedPastTtl: total(shortTtlFaults, 'waitedPastTtl'),
    shortTtlLostInSection: total(shortTtlFaults, 'lostInSection'),
    unmarkFaults: unmarkFaults.length,
    unmarkStripped: total(unmarkFaults, 'stripped'),
    /** Times the lock was seen free with waiters queued: a release that found no mark. */
    unmarkFreeWithQueue: total(unmarkFaults, 'freeWithQueue'),
    unmarkSections: total(unmarkFaults, 'sections'),
    unmarkMaxGapMs: fact(unmarkFaults, 'maxGapMs'),
    staleTurnFaults: staleTurnFaults.length,
    /** Grant notices announced to waiters that had been refused since the grant. */
    staleTurnNotices: total(staleTurnFaults, 'notices'),
    staleTurnSections: total(staleTurnFaults, 'sections'),
    clockBackFaults: clockBackFaults.length,
    /** Sections granted while the counter led the clock: their tokens came from it. */
    clockBackWhileAhead: total(clockBackFaults, 'whileAhead'),
    ...drains,
    ...order,
    ...leadership,
    ...forges,
    ...ticks,
  };
}

/**
 * The most intervals open at once.
 * @param {{ from: number, to: number }[]} intervals sorted by `from`
 */
function mostInside(intervals) {
  let most = 0;
  /** @type {number[]} */
  let ends = [];
  for (const { from, to } of intervals) {
    ends = ends.filter((end) => end > from);
    ends.push(to);
    most = Math.max(most, ends.length);
  }
  return most;
}

/**
 * @param {unknown[]} values milliseconds
 * @param {string} [note] what to compare them with
 */
function spread(values, note = ' (ttl is a lower bound)') {
  const ms = values.filter((v) => typeof v === 'number').sort((a, b) => a - b);
  if (ms.length === 0) return '-';
  if (ms.length === 1) return `${ms[0]} ms${note}`;
  return `min ${ms[0]} / median ${ms[ms.length >> 1]} / max ${ms[ms.length - 1]} ms${note}`;
}

/** @param {unknown[]} values how many times each value came */
function tally(values) {
  /** @type {Map<unknown, number>} */
  const counts = new Map();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([v, n]) => `${String(v)}×${n}`).join(', ') || '-';
}

/** @param {ReturnType<typeof analyze>} r */
export function formatSummary(r) {
  const kv = (/** @type {Record<string, unknown>} */ o) =>
    Object.entries(o)
      .map(([k, v]) => `${k} ${String(v)}`)
      .join(', ') || 'none';
  const lines = [
    `safety checker: ${r.ok ? 'PASS' : 'FAIL'} (${r.kind}, ${(r.elapsedMs / 1000).toFixed(1)} s, ttl ${r.ttl} ms, reads ${r.fenceReads ? '' : 'not '}fenced)`,
    `  most inside at once    ${r.mostInside}`,
    `  processes              ${r.processes} (${r.workersAtOnce} at a time)` +
      (r.sameProcessHandovers > 0 ? `, ${r.sameProcessHandovers} same-process handovers` : ''),
    `  critical sections      ${r.sections} entered, ${r.acceptedWrites} accepted (counter ${r.counter})`,
    `  faults injected        ${kv(r.faultsByKind)}`,
    `  overlaps found         ${r.overlaps} pairs (${r.explainedOverlaps} explained by a fault, ` +
      `${r.toldOverlaps} after the older holder was told its lock was lost), ` +
      `${r.staleHolders} stale holders, ${r.staleHoldersRefused} refused by the guard`,
    `  stale writes rejected  ${r.staleWritesRejected} (stale reads rejected ${r.staleReadsRejected})`,
    `  stale writes accepted  ${r.staleWritesAccepted}`,
    `  lost updates           ${r.lostUpdates}`,
    `  tokens out of order    ${r.tokensOutOfOrder}`,
    `  using() outcomes       ${kv(r.outcomes)}`,
    `  acquire failures       ${kv(r.acquireFailures)} (refusals while shutting down ${r.refusals})`,
    ...(r.redlock ? redlockLines(r) : [`  kill → next acquire    ${spread(r.killTakeoverMs)}`]),
    `  stop: aborted before stale write ${r.stopAbortBeforeWrite}/${r.stopFaults}`,
    ...(r.partitionFaults
      ? [
          `  partition: follower still serving when the next holder acquired ` +
            `${r.partitionStillServing}/${r.partitionFaults}`,
        ]
      : []),
    `  granted, lost before use ${r.grantedButLost} (answered too late to use: ` +
      `${r.expiredOnArrival}${r.expiredOnArrival ? `, in ${spread(r.expiredOnArrivalRttMs, '')}` : ''})`,
    ...drainLines(r, spread),
    ...leaderLines(r, spread),
    ...forgeLines(r, tally),
    ...tickLines(r, tally, spread),
    ...waiterLines(r),
    ...orderLines(r),
    `  violations             ${r.violations.length}`,
    ...r.violations.map((v) => `    - ${v}`),
  ];
  return lines.join('\n');
}

/**
 * The lines of the faults aimed at waiters, for those that ran.
 * @param {ReturnType<typeof analyze>} r
 */
function waiterLines(r) {
  return [
    ...(r.lagFaults
      ? [
          `  lag                    ${r.lagFaults}: pub/sub late by ${spread(r.lagDelayMs, '')}, ` +
            `${r.lagLateChunks} chunks delivered late, ${r.lagStalls} command stalls ` +
            `(${r.lagLongStalls} past the commandTimeout)`,
          `    sections meanwhile   ${r.lagSections} (${r.lagLaggedSections} by lagging ` +
            `workers); key unused at most ${spread(r.lagMaxGapMs, '')}`,
        ]
      : []),
    ...(r.killWaiterFaults
      ? [
          `  kill-waiter            ${r.killWaiterFaults}: ${r.killWaiterVictims} queued ` +
            `waiters killed (ttl 10 s); key unused while others waited ` +
            spread(r.deadWaiterGapMs, ' (handover lease 500 ms)'),
        ]
      : []),
    ...(r.unmarkFaults
      ? [
          `  unmark                 ${r.unmarkFaults}: ${r.unmarkStripped} queue marks taken ` +
            `off, lock seen free with waiters queued ${r.unmarkFreeWithQueue} times; ` +
            `${r.unmarkSections} sections, key unused at most ${spread(r.unmarkMaxGapMs, '')}`,
        ]
      : []),
    ...(r.staleTurnFaults
      ? [
          `  stale-turn             ${r.staleTurnFaults}: ${r.staleTurnNotices} stale grant ` +
            `notices announced to queued waiters; ${r.staleTurnSections} sections meanwhile`,
        ]
      : []),
    ...(r.clockBackFaults
      ? [
          `  clock-back             ${r.clockBackFaults}: counter moved 1.5 s ahead of the ` +
            `clock; ${r.clockBackWhileAhead} sections granted while it led`,
        ]
      : []),
    ...(r.shortTtlFaults
      ? [
          `  short-ttl              ${r.shortTtlFaults}: ${r.shortTtlSections} sections with ` +
            `a ttl of 50–100 ms, ${r.shortTtlWaitedPastTtl} after waiting longer than it; ` +
            `lost in the section ${r.shortTtlLostInSection}`,
        ]
      : []),
  ];
}

/**
 * The RedLock mode's own lines: the kill bound is a majority's expiry, and the restarts of a
 * minority and of a majority of the masters have their own outcomes.
 * @param {ReturnType<typeof analyze>} r
 */
function redlockLines(r) {
  const margins = r.killMarginMs.filter((v) => typeof v === 'number');
  return [
    `  masters                ${r.masters} redis-servers, quorum ${r.quorum}`,
    `  tokens handed out of order ${r.tokensHandedOutOfOrder} (by acquisition)`,
    `  kill → next acquire    ${spread(r.killTakeoverMs, '')}`,
    `    quorum-th PTTL bound ${spread(r.killBoundMs, '')}; ` +
      `acquired before it ${margins.filter((m) => m < -2).length}/${margins.length}, ` +
      `smallest margin ${margins.length ? Math.min(...margins) : '-'} ms`,
    `  minority restarts      ${r.minorityFaults}: lock on a majority of the survivors in ` +
      `${r.minoritySurvivable}, kept by its holder in ${r.minorityKept}/${r.minoritySurvivable}` +
      (r.minorityLostToSlowRenewals
        ? `, given up for renewals too slow to decide in ${r.minorityLostToSlowRenewals}`
        : '') +
      ` (masters holding it before: ${tally(r.minorityHoldingBefore)})`,
    `  restarts losing it     ${r.lossFaults}: holder told ${r.lossTold}/${r.lossFaults}, ` +
      `after ${spread(r.lossToldMs, ` (ttl ${r.ttl})`)}`,
    `    told before the next acquire ${r.lossToldBeforeNext}/${r.lossFaults}; next acquire ` +
      `after ${spread(r.lossNextAcquiredMs, '')}`,
    `    stale write refused ${r.lossStaleWriteRefused}/${r.lossFaults}, ` +
      `LockLostError ${r.lossLockLost}/${r.lossFaults}`,
    `  masters restarted in   ${spread(r.restartMs, '')}`,
  ];
}
