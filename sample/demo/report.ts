import { formatStatuses, seconds, type Check, type Outcomes } from './scenarios.js';

interface Row {
  scenario: string;
  outcome: string;
  /** The checks behind the row's mark; none for a row that only informs. */
  checks: Check[];
}

/** The demo's result table, its verdict and the checks that failed, as printable text. */
export function formatReport(mode: string, outcomes: Outcomes): string {
  const { lottery, throttle, edit } = outcomes;
  const rows: Row[] = [
    {
      scenario: `${lottery.draws} concurrent draws by a user with 1 point`,
      outcome: '',
      checks: [],
    },
    {
      scenario: '  without a lock',
      outcome: `${plural(lottery.unsafe.prizes, 'prize')}, balance ${lottery.unsafe.balance}`,
      checks: [],
    },
    {
      scenario: "  with @WithLock('lottery:<userId>')",
      outcome:
        `${plural(lottery.locked.prizes, 'prize')}, balance ${lottery.locked.balance}` +
        ` (${formatStatuses(lottery.locked.statuses)})`,
      checks: lottery.checks,
    },
    {
      scenario: `${throttle.submissions} concurrent submissions, holdFor 5 s`,
      outcome:
        `${throttle.accepted} accepted, ${throttle.throttled} × 429 with Retry-After ` +
        `${throttle.retryAfter.join('/') || '(none)'} s; ${throttle.stored} stored`,
      checks: throttle.checks,
    },
    {
      scenario: `Slow edit of product ${edit.productId}, TTL ${seconds(edit.ttl)}`,
      outcome:
        edit.status === 200
          ? `lock held ${seconds(edit.heldMs)} = ${(edit.heldMs / edit.ttl).toFixed(1)} × TTL ` +
            '(renewed by the watchdog)'
          : `failed with ${edit.status}`,
      checks: edit.checks,
    },
    {
      scenario: `  concurrent edits at ${edit.probes.map((p) => seconds(p.atMs)).join(' and ')}`,
      outcome: edit.probes.map((p) => p.status).join(', '),
      checks: [],
    },
    {
      scenario: '  next edit, once it ended',
      outcome:
        edit.next.fencingToken > edit.fencingToken
          ? `${edit.next.status}, with a greater fencing token than the slow edit's`
          : `${edit.next.status}, fencing token ${edit.next.fencingToken} (slow edit: ${edit.fencingToken})`,
      checks: [],
    },
  ];

  const width = Math.max(...rows.map((r) => r.scenario.length)) + 3;
  const outcomeWidth = Math.max(...rows.map((r) => r.outcome.length)) + 3;
  const failed = outcomes.checks.filter((c) => !c.passed);
  const lines = [
    '',
    `Mode: ${mode}`,
    '',
    ...rows.map((r) =>
      `  ${r.scenario.padEnd(width)}${r.outcome.padEnd(outcomeWidth)}${mark(r.checks)}`.trimEnd(),
    ),
    '',
    `  Requests answered by ${plural(outcomes.servedBy.length, 'process', 'processes')}` +
      ` (pid ${outcomes.servedBy.join(', ')}).`,
    failed.length === 0
      ? `  All ${outcomes.checks.length} checks passed.`
      : `  ${failed.length} of ${outcomes.checks.length} checks failed:`,
    ...failed.map((c) => `    ✘ ${c.name}: ${c.detail}`),
    '',
  ];
  return lines.join('\n');
}

function mark(checks: Check[]): string {
  if (checks.length === 0) return '';
  return checks.every((c) => c.passed) ? '✔' : '✘';
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
