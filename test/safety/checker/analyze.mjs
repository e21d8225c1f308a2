/**
 * Checks a safety checker run from its history and formats the summary.
 *
 * All ordering comes from the checker's sequence numbers: the checker's process handles every
 * operation on the resource one at a time, so there is one total order and no clock skew.
 *
 * A section's resource interval runs from its read to its write (or to its release when it did
 * not write). Two intervals that overlap mean two holders were inside the critical section at
 * once: an overlap. Each overlap must be explained by a fault (the older holder was a fault's
 * victim, or held the lock while a fault ran), and the older (stale) holder must have been
 * refused by the fencing guard, at its read or its write.
 */

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
  for (const write of acceptedWrites) {
    if (write.token <= lastToken) outOfOrder++;
    if (write.value !== lastValue + 1) chainBreaks++;
    lastToken = write.token;
    lastValue = write.value;
  }
  let highest = 0;
  let staleAccepted = 0;
  for (const entry of log) {
    if (!entry.accepted || (entry.op === 'read' && !checker.resource.fenceReads)) continue;
    if (entry.token < highest && entry.op === 'write') staleAccepted++;
    highest = Math.max(highest, entry.token);
  }
  const stopVictimsAccepted = sections.filter((s) => s.fault === 'stop' && s.writeAccepted).length;
  staleAccepted += stopVictimsAccepted;
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

  // Overlaps of resource intervals.
  const intervals = sections
    .filter((s) => s.readSeq !== undefined)
    .map((s) => ({
      section: s,
      from: /** @type {number} */ (s.readSeq),
      to: s.writeSeq ?? s.releasedSeq ?? Infinity,
    }))
    .sort((a, b) => a.from - b.from);
  const explainedBy = (/** @type {Section} */ s) =>
    s.fault !== undefined ||
    checker.faults.some(
      (f) => s.acquiredSeq <= (f.endSeq ?? Infinity) && (s.releasedSeq ?? Infinity) >= f.startSeq,
    );
  let overlaps = 0;
  let explainedOverlaps = 0;
  /** @type {Set<Section>} */
  const staleHolders = new Set();
  for (let i = 0; i < intervals.length; i++) {
    for (let j = i + 1; j < intervals.length && intervals[j].from < intervals[i].to; j++) {
      overlaps++;
      const [a, b] = [intervals[i].section, intervals[j].section];
      const [stale, fresh] = a.token < b.token ? [a, b] : [b, a];
      const where = `workers ${stale.worker} (token ${stale.token}) and ${fresh.worker} (token ${fresh.token})`;
      staleHolders.add(stale);
      if (explainedBy(stale)) explainedOverlaps++;
      else violations.push(`overlap without a fault: ${where}`);
      if (stale.readAccepted && stale.writeAccepted) {
        violations.push(`overlap where the stale holder's write was accepted: ${where}`);
      }
    }
  }

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

  return {
    ok: violations.length === 0,
    violations,
    elapsedMs,
    processes: checker.processesStarted,
    workersAtOnce: checker.workerCount,
    ttl: checker.ttl,
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
    staleHolders: staleHolders.size,
    staleHoldersRefused: [...staleHolders].filter((s) => !(s.readAccepted && s.writeAccepted))
      .length,
    tokensOutOfOrder: outOfOrder,
    faultsByKind,
    outcomes,
    acquireFailures: checker.acquireFailures,
    killTakeoverMs: killFaults.map((f) => f.facts.takeoverAfterKillMs),
    stopAbortBeforeWrite: stopFaults.filter((f) => f.facts.signalAbortedAtWrite === true).length,
    stopFaults: stopFaults.length,
    restartLostReasons: restartFaults.map((f) => f.facts.lostReason),
  };
}

/** @param {unknown[]} values milliseconds */
function spread(values) {
  const ms = values.filter((v) => typeof v === 'number').sort((a, b) => a - b);
  if (ms.length === 0) return '-';
  if (ms.length === 1) return `${ms[0]} ms (ttl is a lower bound)`;
  return `min ${ms[0]} / median ${ms[ms.length >> 1]} / max ${ms[ms.length - 1]} ms (ttl is a lower bound)`;
}

/** @param {ReturnType<typeof analyze>} r */
export function formatSummary(r) {
  const kv = (/** @type {Record<string, unknown>} */ o) =>
    Object.entries(o)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const lines = [
    `safety checker: ${r.ok ? 'PASS' : 'FAIL'} (${(r.elapsedMs / 1000).toFixed(1)} s, ttl ${r.ttl} ms, reads ${r.fenceReads ? '' : 'not '}fenced)`,
    `  processes              ${r.processes} (${r.workersAtOnce} at a time)`,
    `  critical sections      ${r.sections} entered, ${r.acceptedWrites} accepted (counter ${r.counter})`,
    `  faults injected        ${kv(r.faultsByKind)}`,
    `  overlaps found         ${r.overlaps} pairs (${r.explainedOverlaps} explained by a fault), ` +
      `${r.staleHolders} stale holders, ${r.staleHoldersRefused} refused by the guard`,
    `  stale writes rejected  ${r.staleWritesRejected} (stale reads rejected ${r.staleReadsRejected})`,
    `  stale writes accepted  ${r.staleWritesAccepted}`,
    `  lost updates           ${r.lostUpdates}`,
    `  tokens out of order    ${r.tokensOutOfOrder}`,
    `  using() outcomes       ${kv(r.outcomes)}`,
    `  acquire failures       ${kv(r.acquireFailures)}`,
    `  kill → next acquire    ${spread(r.killTakeoverMs)}`,
    `  stop: aborted before stale write ${r.stopAbortBeforeWrite}/${r.stopFaults}`,
    `  violations             ${r.violations.length}`,
    ...r.violations.map((v) => `    - ${v}`),
  ];
  return lines.join('\n');
}
