import type { BenchResults } from './results.js';
import { round } from './stats.js';

/** One of the targets, as measured in this run. */
export interface Check {
  target: string;
  /** The measured figure as a ratio to the target's reference (see `measured` for which). */
  ratio: number;
  measured: string;
  pass: boolean;
}

/** Peers a user would pick instead (not the floor, not the naive loop). */
export const PEER_IDS = ['redlock', 'sesame-redlock', 'redis-semaphore'];

const x = (value: number) => `${value.toFixed(2)}×`;

/**
 * The targets, each judged on figures from this one run. This only reports: a miss is
 * a FAIL line, never an exception or an exit code.
 */
export function checklist(r: Omit<BenchResults, 'checklist' | 'violations'>): Check[] {
  const lib = r.libraryId;
  const checks: Check[] = [];
  const add = (target: string, ratio: number, measured: string, pass: boolean) =>
    checks.push({ target, ratio: round(ratio, 3), measured, pass });

  const unc = r.uncontended[lib].opsPerSec / r.uncontended[r.floorId].opsPerSec;
  add(
    'Uncontended throughput ≥ 0.95 × raw floor',
    unc,
    `${x(unc)} floor (${r.uncontended[lib].opsPerSec.toFixed(0)} vs ${r.uncontended[r.floorId].opsPerSec.toFixed(0)} ops/s)`,
    unc >= 0.95,
  );
  const par = r.parallel[lib].opsPerSec / r.parallel[r.floorId].opsPerSec;
  add(
    'Distinct-key throughput (64 callers) ≥ 0.95 × raw floor',
    par,
    `${x(par)} floor (${r.parallel[lib].opsPerSec.toFixed(0)} vs ${r.parallel[r.floorId].opsPerSec.toFixed(0)} ops/s)`,
    par >= 0.95,
  );

  const burst = r.burst[lib];
  const vsIdeal = burst.makespanMs / burst.idealMs;
  add(
    'Burst makespan ≤ 1.25 × ideal',
    vsIdeal,
    `${x(vsIdeal)} ideal (${burst.makespanMs.toFixed(1)} vs ${burst.idealMs.toFixed(1)} ms)`,
    vsIdeal <= 1.25,
  );
  const peers = PEER_IDS.filter((id) => r.burst[id]);
  const speedups = peers.map((id) => ({ id, speedup: r.burst[id].makespanMs / burst.makespanMs }));
  const closest = speedups.reduce((a, b) => (b.speedup < a.speedup ? b : a));
  add(
    'Burst ≥ 3× faster than every peer',
    closest.speedup,
    `${x(closest.speedup)} faster than the closest peer (${closest.id}, ${r.burst[closest.id].makespanMs.toFixed(0)} ms)`,
    closest.speedup >= 3,
  );

  const c = r.contended[lib];
  add(
    'Contended: zero lost updates',
    c.lostUpdates,
    `${c.lostUpdates} lost, ${c.overlaps} overlaps, ${c.timeouts} timeouts over ${r.config.contended.rounds} rounds`,
    c.lostUpdates === 0 && c.overlaps === 0,
  );
  const p99 = c.waitP99Ms / c.idealP99Ms;
  add(
    'Contended wait p99 ≤ 1.5 × (workers × section)',
    p99,
    `${x(p99)} (p99 ${c.waitP99Ms.toFixed(1)} ms vs ${c.workers} × ${c.sectionMs.toFixed(2)} ms = ${c.idealP99Ms.toFixed(1)} ms)`,
    p99 <= 1.5,
  );
  for (const [label, res] of [
    ['contended', c],
    ['burst', burst],
  ] as const) {
    add(
      `≤ 4 Redis commands per acquisition, ${label} (INFO commandstats, incl. inside scripts)`,
      res.serverCommandsPerAcquisition / 4,
      `${res.serverCommandsPerAcquisition.toFixed(2)} per acquisition (${res.sentCommandsPerAcquisition.toFixed(2)} sent by the client)`,
      res.serverCommandsPerAcquisition <= 4,
    );
  }

  const renewal = r.held.library.renewal;
  const perConnection = renewal.roundTripsPerConnectionPerTick;
  add(
    'Renewal ≤ 1 round trip per connection per tick',
    perConnection,
    `${perConnection.toFixed(2)} per connection in the worst of ${renewal.ticks} ticks (${renewal.connections} connection; ${renewal.scriptCallsPerTick.toFixed(1)} script calls per tick)`,
    perConnection <= 1,
  );
  const perLock = r.held.library.heapPerLockBytes;
  add(
    '≤ 2 KiB heap per held lock',
    perLock / 2048,
    `${(perLock / 1024).toFixed(2)} KiB per lock (${r.held.library.locks} locks${r.held.gcExposed ? '' : ', no --expose-gc: approximate'})`,
    perLock <= 2048,
  );
  add(
    'Held locks: none lost over the renewal periods (not an issue target; a sanity check)',
    renewal.lost,
    `${renewal.lost} of ${r.held.library.locks} lost; min PTTL ${renewal.pttl.minMs} ms of ${renewal.ttlMs}`,
    renewal.lost === 0,
  );
  const d = r.decorator;
  add(
    'Decorator overhead ≤ 5 % over LockService.using',
    d.overheadPct / 100,
    `${d.overheadPct.toFixed(1)} % (${d.decoratorOpsPerSec.toFixed(0)} vs ${d.usingOpsPerSec.toFixed(0)} ops/s)`,
    d.overheadPct <= 5,
  );
  return checks;
}
