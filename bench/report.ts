import type { BenchResults } from './results.js';
import { WITH_WAIT, WITHOUT_WAIT } from './workloads/replicas.js';

const int = (value: number) =>
  Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : String(value);
const ms = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : '–');

const cell = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(2));

/** A markdown table; the first column is left-aligned, the others right, unless `textColumns`. */
function table(header: string[], rows: string[][], textColumns = 1): string {
  const align = header.map((_, i) => (i < textColumns ? '---' : '---:'));
  return [header, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** The whole run as markdown: one table per workload, then the targets' checklist. */
export function formatReport(r: BenchResults): string {
  const names = new Map(r.implementations.map((i) => [i.id, i.name]));
  const name = (id: string) => (id === r.libraryId ? `**${names.get(id)}**` : names.get(id)!);
  const m = r.machine;
  const out: string[] = [];
  const section = (title: string, note: string, body: string) =>
    out.push(`### ${title}\n\n${note}\n\n${body}\n`);

  out.push(
    `## nestjs-redis-lock benchmark\n\n` +
      `${m.cpuModel}, ${m.cores} cores, ${m.totalMemoryGiB} GiB, ${m.platform}; Node ${m.node}; ` +
      `Redis ${m.redis} ${r.externalRedis ? '(REDIS_URL)' : '(throwaway, loopback)'}; ` +
      `load ${m.loadAverage1m} at start` +
      (m.git
        ? `; commit ${m.git.commit}${m.git.srcDirty ? ' + uncommitted src/ changes' : ''}`
        : '') +
      `. PING round trip ${ms(r.rtt.afterIdleMs, 3)} ms after ${r.config.burst.holdMs} ms idle, ` +
      `${ms(r.rtt.backToBackMs, 3)} ms back-to-back. ${r.startedAt}, ${r.durationS.toFixed(0)} s.` +
      (r.config.quick ? '\n\n**BENCH_QUICK=1: shortened run, figures not comparable.**' : '') +
      '\n',
  );

  const unc = r.config.uncontended;
  const par = r.config.parallel;
  const throughputRows = (results: BenchResults['uncontended'], server: boolean) =>
    Object.entries(results).map(([id, res]) => [
      name(id),
      int(res.opsPerSec),
      ratio(res.opsPerSec / results[r.floorId].opsPerSec),
      ...(server ? [cell(res.serverCommandsPerOp)] : []),
      res.sentCommandsPerOp.toFixed(2),
      res.rounds.map((x) => int(x.opsPerSec)).join(', '),
      String(res.rounds.reduce((n, x) => n + x.errors, 0)),
    ]);
  const throughputHeader = (server: boolean) => [
    'Implementation',
    'ops/s (median)',
    '× floor',
    ...(server ? ['Redis cmds/op'] : []),
    'sent/op',
    'rounds (ops/s)',
    'errors',
  ];
  section(
    '1. Uncontended: one caller, acquire + release in sequence',
    `An op is acquire + release. ${unc.rounds} rounds; in each, the implementations take turns op by ` +
      `op (never concurrently) for about ${unc.roundMs / 1000} s of their own time, and ops/s is ops ` +
      'over that time: so all meet the same swings of this machine. Median round.',
    table(throughputHeader(false), throughputRows(r.uncontended, false)),
  );
  section(
    `2. Parallel distinct keys: ${par.callers} concurrent callers, each on its own key`,
    `An op is acquire + release. ${par.rounds} rounds of ${par.roundMs / 1000} s, the implementations one ` +
      'after the other in a rotating order; median round. Redis commands per op counted as in ' +
      'workload 5.',
    table(throughputHeader(true), throughputRows(r.parallel, true)),
  );

  const c = r.config.contended;
  const anyContended = Object.values(r.contended)[0];
  section(
    `3. Contended: ${c.workers} workers × ${c.sections} critical sections on ONE key`,
    `Each section: GET counter, ${c.workMs} ms timer, SET counter + 1 (not atomic: only the lock ` +
      `protects it). ${c.rounds} rounds; makespan = median round; waits pooled over all rounds ` +
      `(${c.rounds * c.workers * c.sections} acquisitions). Ideal p99 = ${c.workers} × section ` +
      `(${ms(anyContended.sectionMs, 2)} ms, measured) = ${ms(anyContended.idealP99Ms)} ms.`,
    table(
      [
        'Implementation',
        'makespan ms',
        'sections/s',
        'wait p50 ms',
        'wait p99 ms',
        'wait max ms',
        'p99 ÷ ideal',
        'lost updates',
        'timeouts',
      ],
      Object.entries(r.contended).map(([id, res]) => [
        name(id),
        ms(res.makespanMs),
        int(res.sectionsPerSec),
        ms(res.waitP50Ms),
        ms(res.waitP99Ms),
        ms(res.waitMaxMs),
        ratio(res.waitP99Ms / res.idealP99Ms),
        String(res.lostUpdates + (res.overlaps ? ` (${res.overlaps} overlaps)` : '')),
        String(res.timeouts),
      ]),
    ),
  );

  const b = r.config.burst;
  const anyBurst = Object.values(r.burst)[0];
  const libBurst = r.burst[r.libraryId];
  section(
    `4. Burst: ${b.requests} one-shot requests for ONE key at once, ${b.holdMs} ms hold each`,
    `${b.rounds} rounds; makespan = median round; waits pooled. Ideal = ${b.requests} × ` +
      `(${ms(anyBurst.holdMs, 2)} ms measured hold + ${ms(anyBurst.rttMs, 3)} ms PING round trip ` +
      `after as long idle) = ` +
      `${ms(anyBurst.idealMs)} ms.`,
    table(
      [
        'Implementation',
        'makespan ms',
        '× ideal',
        'vs this library',
        'wait p50 ms',
        'wait p99 ms',
        'timeouts',
      ],
      Object.entries(r.burst).map(([id, res]) => [
        name(id),
        ms(res.makespanMs),
        ratio(res.makespanMs / res.idealMs),
        id === r.libraryId
          ? '–'
          : res.makespanMs >= libBurst.makespanMs
            ? `${ratio(res.makespanMs / libBurst.makespanMs)} slower`
            : `${ratio(libBurst.makespanMs / res.makespanMs)} faster`,
        ms(res.waitP50Ms),
        ms(res.waitP99Ms),
        String(res.timeouts + (res.overlaps ? ` (${res.overlaps} overlaps)` : '')),
      ]),
    ),
  );

  out.push(instancesSection(r, name));

  const ids = [...new Set([...Object.keys(r.contended), ...Object.keys(r.burst)])];
  section(
    '5. Redis commands per acquisition (workloads 3 and 4)',
    '`INFO commandstats` deltas around each implementation running alone: every command ' +
      'Redis executed, including those Lua scripts call inside Redis, minus the benchmark’s ' +
      'own counter GET/SET and INFO; divided by successful acquisitions. "Sent" counts what ' +
      'the implementation’s connections sent (a script call is one), i.e. requests on the wire.',
    table(
      ['Implementation', 'contended: Redis', 'contended: sent', 'burst: Redis', 'burst: sent'],
      ids.map((id) => [
        name(id),
        cell(r.contended[id]?.serverCommandsPerAcquisition),
        cell(r.contended[id]?.sentCommandsPerAcquisition),
        cell(r.burst[id]?.serverCommandsPerAcquisition),
        cell(r.burst[id]?.sentCommandsPerAcquisition),
      ]),
    ),
  );

  const held = r.held;
  const ren = held.library.renewal;
  section(
    `6. Held-lock scale: ${int(held.library.locks)} locks held at once, ttl ${ren.ttlMs} ms, watchdog on`,
    `Held for ${(ren.holdMs / 1000).toFixed(2)} s ≈ ${r.config.held.periods} renewal periods of ttl / 3. Heap = ` +
      `heapUsed growth while held${held.gcExposed ? ', after full GCs (--expose-gc)' : ' (no --expose-gc: includes uncollected garbage)'}. ` +
      `PTTL of ${ren.pttl.sampledLocks} spread-out locks sampled every ${ren.pttl.everyMs} ms. ` +
      `The floor holds bare SET NX PX keys and renews nothing (memory reference).`,
    table(
      ['Measure', names.get(r.libraryId)!, names.get(r.floorId)!],
      [
        [
          'acquire all / release all, ms',
          `${int(held.library.acquireMs)} / ${int(held.library.releaseMs)}`,
          `${int(held.floor.acquireMs)} / ${int(held.floor.releaseMs)}`,
        ],
        [
          'heap per held lock',
          `${int(held.library.heapPerLockBytes)} B`,
          `${int(held.floor.heapPerLockBytes)} B`,
        ],
        [
          'heap per lock left after release',
          `${int(held.library.heapAfterReleasePerLockBytes)} B`,
          `${int(held.floor.heapAfterReleasePerLockBytes)} B`,
        ],
        ['renewal EVALSHA/s (Redis)', ms(ren.evalshaPerSec), '0'],
        ['renewal commands/s incl. inside scripts (Redis)', int(ren.serverCommandsPerSec), '0'],
        ['ticks seen / script calls per tick', `${ren.ticks} / ${ms(ren.scriptCallsPerTick)}`, '–'],
        ['locks renewed per renewal request', ms(ren.locksPerRenewalRequest, 1), '–'],
        [
          'event-loop delay while held: p50 / p99 / max ms (1 ms probe)',
          `${ms(ren.eventLoopDelay.p50Ms, 2)} / ${ms(ren.eventLoopDelay.p99Ms, 2)} / ${ms(ren.eventLoopDelay.maxMs, 2)}`,
          '–',
        ],
        [
          'round trips per connection per tick, worst tick (pipelined sends = 1)',
          `${ms(ren.roundTripsPerConnectionPerTick, 2)} (${ren.connections} connection)`,
          '–',
        ],
        [
          'min PTTL seen (of ttl)',
          `${ren.pttl.minMs} ms (${((ren.pttl.minMs / ren.ttlMs) * 100).toFixed(0)} %)`,
          '–',
        ],
        [
          'longest without renewal / lag vs ttl/3 schedule',
          `${ren.pttl.longestUnrenewedMs} ms / ${ren.pttl.lagMs >= 0 ? '+' : ''}${ren.pttl.lagMs} ms`,
          '–',
        ],
        ['locks lost during the hold', String(ren.lost), '–'],
      ],
    ),
  );

  const d = r.decorator;
  section(
    '7. Wrapper overhead: `@WithLock` method, `LockService.using` and bare acquire + release, same work and key',
    `One caller; the three take turns call by call (${int(d.calls)} calls each) over ` +
      `${r.config.decorator.rounds} rounds of ${r.config.decorator.roundMs / 1000} s; overhead = ` +
      `median of the rounds' time ratios (decorator over using: range ${Math.min(...d.roundOverheadsPct).toFixed(1)} ` +
      `to ${Math.max(...d.roundOverheadsPct).toFixed(1)} %).`,
    table(
      ['Call', 'ops/s', 'median latency µs', 'overhead over bare'],
      [
        [
          "`@WithLock('dec:<id>')` method",
          int(d.decoratorOpsPerSec),
          ms(d.decoratorP50Us),
          `${d.decoratorOverBarePct.toFixed(1)} %`,
        ],
        [
          "`locks.using('dec:' + id, fn)`",
          int(d.usingOpsPerSec),
          ms(d.usingP50Us),
          `${d.usingOverBarePct.toFixed(1)} %`,
        ],
        ['`acquire`, work, `release`', int(d.bareOpsPerSec), ms(d.bareP50Us), '–'],
        ['decorator over using', `${d.overheadPct.toFixed(1)} %`, '', ''],
      ],
    ),
  );

  out.push(curvesSection(r, name));
  out.push(redlockSection(r));
  out.push(replicasSection(r));
  if (r.clients) out.push(clientsSection(r.clients, r.config.instances.instances));

  // Workload 8's single-node variants wait as the main ones do: listed once.
  const redlockImplementations =
    'skipped' in r.redlock ? [] : r.redlock.implementations.filter((i) => i.masters > 1);
  out.push(
    '### How each implementation waits\n\n' +
      [...r.implementations, ...redlockImplementations]
        .map((i) => `- ${i.name}: ${i.waiting}`)
        .join('\n') +
      '\n',
  );

  out.push(
    '### Targets (RedLock: workload 8; waitForReplicas: workload 9; instances: workload 10), judged on this run\n\n' +
      table(
        ['Target', 'Measured', 'Result'],
        r.checklist.map((check) => [check.target, check.measured, check.pass ? 'PASS' : 'FAIL']),
        3,
      ) +
      `\n\n${r.checklist.filter((check) => check.pass).length} of ${r.checklist.length} passed.` +
      (r.violations.length
        ? `\n\n**Mutual exclusion violated:** ${r.violations.join('; ')}`
        : '\n\nNo lost updates or overlapping holders in any implementation.') +
      '\n',
  );
  return out.join('\n');
}

/** Workload 11: the curves, as tables (the charts are SVG files beside latest.json). */
function curvesSection(r: BenchResults, name: (id: string) => string): string {
  const cfg = r.config.curves;
  const curveTable = (curve: BenchResults['curves']['instances'], what: string, wait: string) =>
    table(
      ['Implementation', ...Object.values(curve)[0].map((p) => `${p.size} ${what}`)],
      Object.entries(curve).map(([id, points]) => [
        name(id),
        ...points.map(
          (p) =>
            `${int(p.opsPerSec)} / ${ms(p.waitP99Ms, 2)}` +
            (p.lostUpdates + p.overlaps + p.errors > 0
              ? ` (${p.lostUpdates} lost, ${p.overlaps} overlaps, ${p.errors} errors)`
              : ''),
        ),
      ]),
    ) + `\n\nCells: ops/s / ${wait} p99 ms.`;
  return (
    `### 11. Curves: how cost grows with instances on one key and with keys in flight\n\n` +
    `One key: ${cfg.instanceSizes.join(', ')} instance processes (as in workload 10), about ` +
    `${cfg.sectionsPerPoint} sections per round spread over them, ${cfg.instanceRounds} rounds ` +
    'per point, implementations interleaved; throughput is sections per second, waits are from ' +
    `acquire called to resolved. Distinct keys: ${cfg.keySizes.join(', ')} callers in this ` +
    `process, each on its own key (nobody waits), ${cfg.keyRounds} rounds of ${cfg.keyRoundMs} ms ` +
    'per point. Charts: `bench/results/curve-*.svg` and ' +
    `\`bench/results/waits-${r.curves.distributionAt}-instances.svg\`.\n\n` +
    curveTable(r.curves.instances, 'inst.', 'wait') +
    '\n\n' +
    curveTable(r.curves.keys, 'keys', 'acquire latency') +
    '\n'
  );
}

/** Workload 10: separate instance processes on one key. */
function instancesSection(r: BenchResults, name: (id: string) => string): string {
  const cfg = r.config.instances;
  const rtt = r.rtt.afterIdleMs;
  const rows = Object.entries(r.instances).map(([id, res]) => [
    name(id),
    int(res.sectionsPerSec),
    ms(res.waitP50Ms),
    ms(res.waitP99Ms),
    ms(res.waitMaxMs),
    `${ms(res.handoffMs, 2)} (${(res.handoffMs / rtt).toFixed(0)} RTT)`,
    ratio(res.waitP99Ms / res.fifoWaitMs),
    `${res.inOrderPct.toFixed(1)} %`,
    String(res.maxOvertaken),
    res.sentPerSection.toFixed(2),
    res.subscriptionsPerSection.toFixed(2),
    (res.wokenPerSection ?? 0).toFixed(2),
    res.serverCommandsPerSection.toFixed(1),
    String(res.lostUpdates + (res.overlaps ? ` (${res.overlaps} overlaps)` : '')),
    String(res.timeouts),
  ]);
  return (
    `### 10. ${cfg.instances} instances: ${cfg.instances} processes × ${cfg.sections} sections on ONE key\n\n` +
    `${cfg.instances} processes, each an app with its own connections for every implementation ` +
    '(this library: its own Nest context, `LockService` and subscriber), one worker in each ' +
    "looping on workload 3's section. Implementations take turns round by round on the same " +
    `processes and key, after a warm-up round each (it opens what stays open in a running app: ` +
    "scripts loaded, this library's subscriptions, which outlive a wait by 5 s); " +
    `${cfg.rounds} rounds, median round, waits ` +
    'pooled. Times on the system-wide monotonic clock. Handoff: median time from a holder’s ' +
    'last write answered to the next holder’s acquire resolving, when the next was already ' +
    `waiting (RTT: ${ms(rtt, 3)} ms PING). Ideal FIFO wait: ${cfg.instances} × (section + ` +
    'handoff), one turn of the lock around every instance. In order: grants to the ' +
    'longest-waiting caller; overtaken: most later callers served before one caller. Sent: ' +
    'requests from all connections of all instances (subscribers included), per section; ' +
    '(UN)SUBSCRIBE of them. Woken: pub/sub messages the instances received, per section: ' +
    'with one subscriber per process, how many processes a release wakes. Redis: commands ' +
    'executed (INFO commandstats, inside scripts too), minus the counter’s.' +
    '\n\n' +
    table(
      [
        'Implementation',
        'sections/s',
        'wait p50 ms',
        'wait p99 ms',
        'wait max ms',
        'handoff ms',
        'p99 ÷ ideal FIFO',
        'in order',
        'max overtaken',
        'sent/section',
        '(UN)SUBSCRIBE',
        'woken/section',
        'Redis cmds/section',
        'lost updates',
        'timeouts',
      ],
      rows,
    ) +
    '\n'
  );
}

/** Workload 8: RedLock over 3 and 5 masters, this library and the `redlock` package. */
/** Workload 12: this library on each client library, against itself on ioredis. */
function clientsSection(c: NonNullable<BenchResults['clients']>, instances: number): string {
  const base = Object.values(c.uncontended)[0];
  const baseContended = Object.values(c.instances)[0];
  const rows = Object.entries(c.uncontended).map(([id, res]) => {
    const contended = c.instances[id];
    return [
      id,
      int(res.opsPerSec),
      ratio(res.opsPerSec / base.opsPerSec),
      res.latencyMs ? `${ms(res.latencyMs.p50, 3)} / ${ms(res.latencyMs.p99, 3)}` : '–',
      contended ? int(contended.sectionsPerSec) : '–',
      contended ? ratio(contended.sectionsPerSec / baseContended.sectionsPerSec) : '–',
      contended ? `${ms(contended.waitP50Ms)} / ${ms(contended.waitP99Ms)}` : '–',
    ];
  });
  return (
    '### 12. Client libraries\n\n' +
    `This library on each Redis client library, against itself on ioredis (first row): one ` +
    `caller's acquire + release, then ${instances} instances on one key (workload 10).\n\n` +
    table(
      [
        'Client',
        'uncontended ops/s',
        '× ioredis',
        'latency p50 / p99 ms',
        `${instances} instances sections/s`,
        '× ioredis',
        'wait p50 / p99 ms',
      ],
      rows,
    ) +
    '\n'
  );
}

function redlockSection(r: BenchResults): string {
  const title =
    '### 8. RedLock: this library and the `redlock` package over 1, 3 and 5 masters\n\n';
  if ('skipped' in r.redlock) return `${title}Not run: ${r.redlock.skipped}.\n`;
  const rl = r.redlock;
  const cfg = r.config.redlock;
  const names = new Map(rl.implementations.map((i) => [i.id, i]));
  const name = (id: string) =>
    names.get(id)!.kind === 'library' ? `**${names.get(id)!.name}**` : names.get(id)!.name;
  // Each implementation against the same lock on a single node (its `:1` variant).
  const single = (id: string) =>
    rl.implementations.find((i) => i.kind === names.get(id)!.kind && i.masters === 1)!.id;
  const p50 = (id: string) => rl.uncontended[id].latencyMs?.p50 ?? NaN;
  const masters =
    `${rl.masters.count} throwaway redis-servers (Redis ${rl.masters.redis}, loopback, nothing ` +
    `saved), started for this workload and stopped after it` +
    (rl.masters.besideRedisUrl ? ', although REDIS_URL was set (it gives only one server)' : '') +
    '. "1 master" is the first of them alone; RedLock-3 uses the first 3. This library runs with ' +
    'its RedLock defaults (not fair, nodeTimeout 250 ms, watchdog on); `redlock` with one ' +
    'client per master and its default retry delay.';

  const unc = rl.uncontended;
  const uncontended = table(
    [
      'Implementation',
      'masters',
      'median ms',
      'p99 ms',
      'ops/s (median round)',
      '× its median on 1 node',
      'sent/op',
      'errors',
    ],
    Object.entries(unc).map(([id, res]) => [
      name(id),
      String(names.get(id)!.masters),
      ms(p50(id), 3),
      ms(res.latencyMs?.p99 ?? NaN, 3),
      int(res.opsPerSec),
      ratio(p50(id) / p50(single(id))),
      res.sentCommandsPerOp.toFixed(2),
      String(res.rounds.reduce((n, x) => n + x.errors, 0)),
    ]),
  );
  const c = cfg.contended;
  const contended = table(
    [
      'Implementation',
      'masters',
      'makespan ms',
      'sections/s',
      'wait p50 ms',
      'wait p99 ms',
      'wait max ms',
      'lost updates',
      'timeouts',
      'Redis cmds/acq',
      'sent/acq',
    ],
    Object.entries(rl.contended).map(([id, res]) => [
      name(id),
      String(names.get(id)!.masters),
      ms(res.makespanMs),
      int(res.sectionsPerSec),
      ms(res.waitP50Ms),
      ms(res.waitP99Ms),
      ms(res.waitMaxMs),
      String(res.lostUpdates + (res.overlaps ? ` (${res.overlaps} overlaps)` : '')),
      String(res.timeouts),
      res.serverCommandsPerAcquisition.toFixed(2),
      res.sentCommandsPerAcquisition.toFixed(2),
    ]),
  );
  return (
    title +
    `${masters}\n\n` +
    `**8a. Uncontended**: one caller, acquire + release. ${cfg.uncontended.rounds} rounds; in ` +
    'each, all six take turns op by op (as in workload 1) for about ' +
    `${cfg.uncontended.roundMs / 1000} s of their own time. Latency percentiles over every op ` +
    'of every round.\n\n' +
    `${uncontended}\n\n` +
    `**8b. Contended**: ${c.workers} workers × ${c.sections} sections on ONE key, each section ` +
    `GET counter, ${r.config.contended.workMs} ms timer, SET counter + 1 (the counter on the ` +
    `first master); ${c.rounds} rounds, makespan = median round, waits pooled. Redis commands ` +
    'summed over all masters (INFO commandstats, incl. inside scripts), minus the counter’s.' +
    `\n\n${contended}\n`
  );
}

/** Workload 9: this library on a master with one replica, with and without waitForReplicas. */
function replicasSection(r: BenchResults): string {
  const title = '### 9. waitForReplicas: the same master with one replica, with and without\n\n';
  if ('skipped' in r.replicas) return `${title}Not run: ${r.replicas.skipped}.\n`;
  const w = r.replicas;
  const cfg = r.config.replicas;
  const label = (id: string) =>
    id === WITH_WAIT
      ? `**waitForReplicas {replicas: ${w.waitForReplicas.replicas}, timeout: ${w.waitForReplicas.timeout}}**`
      : 'without (default)';
  const errors = (res: (typeof w.uncontended)[string]) =>
    String(res.rounds.reduce((n, x) => n + x.errors, 0));
  const p50 = (id: string) => w.uncontended[id].latencyMs?.p50 ?? NaN;
  const added = p50(WITH_WAIT) - p50(WITHOUT_WAIT);
  const uncontended = table(
    ['Variant', 'median ms', 'p99 ms', 'ops/s (median round)', '× without', 'sent/op', 'errors'],
    [WITHOUT_WAIT, WITH_WAIT].map((id) => {
      const res = w.uncontended[id];
      return [
        label(id),
        ms(p50(id), 3),
        ms(res.latencyMs?.p99 ?? NaN, 3),
        int(res.opsPerSec),
        ratio(p50(id) / p50(WITHOUT_WAIT)),
        res.sentCommandsPerOp.toFixed(2),
        errors(res),
      ];
    }),
  );
  const concurrent = table(
    [
      'Variant',
      'ops/s (median round)',
      '× without',
      'WAITs/op',
      'Redis cmds/op',
      'sent/op',
      'errors',
    ],
    [WITHOUT_WAIT, WITH_WAIT].map((id) => {
      const res = w.concurrent[id];
      return [
        label(id),
        int(res.opsPerSec),
        ratio(res.opsPerSec / w.concurrent[WITHOUT_WAIT].opsPerSec),
        res.waitsPerOp.toFixed(3),
        cell(res.serverCommandsPerOp),
        res.sentCommandsPerOp.toFixed(2),
        errors(res),
      ];
    }),
  );
  return (
    title +
    `Two throwaway redis-servers (Redis ${w.servers.redis}, loopback, nothing saved), the second ` +
    `made a replica of the first with REPLICAOF (in sync after ${w.servers.syncMs.toFixed(0)} ms, ` +
    `diskless; link ${w.servers.linkUpAtEnd ? 'still up' : '**down**'} at the end), started for ` +
    'this workload and stopped after it' +
    (w.servers.besideRedisUrl ? ', although REDIS_URL was set' : '') +
    '. Both variants are this library with its defaults on the master; one adds WAIT after ' +
    'each acquisition. For scale, on a connection of the benchmark’s own: a bare SET takes ' +
    `${ms(w.bare.setMs, 3)} ms and the WAIT right after it ${ms(w.bare.waitMs, 3)} ms (medians).\n\n` +
    `**9a. Uncontended**: one caller, acquire + release; ${cfg.uncontended.rounds} rounds in ` +
    'which the two take turns op by op (as in workload 1) for about ' +
    `${cfg.uncontended.roundMs / 1000} s of their own time. Latency percentiles over every op of ` +
    `every round. The option adds ${ms(added, 3)} ms to the median (a bare WAIT: ` +
    `${ms(w.bare.waitMs, 3)} ms).\n\n${uncontended}\n\n` +
    `**9b. Concurrent**: ${cfg.concurrent.callers} callers, each acquire + release on its own ` +
    `key; ${cfg.concurrent.rounds} rounds of ${cfg.concurrent.roundMs / 1000} s, the variants in ` +
    'turn, median round. WAITs/op: WAITs Redis ran per acquire + release (INFO commandstats on ' +
    `the master); 1 would mean no WAIT is shared.\n\n${concurrent}\n`
  );
}
