/**
 * What the locks did, as the app's processes report it on `GET /metrics` (Prometheus text, from
 * the library's OpenTelemetry metrics): per lock name, the acquisitions by outcome, the locks
 * lost, and how long acquired locks took to get (p50, p99, estimated from the histogram's
 * buckets as Prometheus's `histogram_quantile` does). Shared by `demo.ts` and the sample's test.
 */

/** One sample line of the Prometheus text format. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** What the metrics say about the locks of one name, summed over the processes. */
export interface LockSummary {
  name: string;
  /** Acquisitions by `lock.outcome`. */
  outcomes: Record<string, number>;
  lost: number;
  /** Seconds from the call to the grant, for the acquisitions that got the lock. */
  waitP50?: number;
  waitP99?: number;
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) {
      labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The locks of every name that the expositions (one per process) mention, by name. */
export function summarizeLocks(expositions: readonly string[]): LockSummary[] {
  const samples = expositions.flatMap(parsePrometheus);
  const byName = new Map<string, LockSummary>();
  const summary = (name: string) => {
    let found = byName.get(name);
    if (!found) byName.set(name, (found = { name, outcomes: {}, lost: 0 }));
    return found;
  };
  const buckets = new Map<string, Map<number, number>>();
  for (const { name, labels, value } of samples) {
    const lock = labels.lock_name;
    if (lock === undefined) continue;
    if (name.startsWith('lock_acquire_duration') && name.endsWith('_count')) {
      const { outcomes } = summary(lock);
      outcomes[labels.lock_outcome] = (outcomes[labels.lock_outcome] ?? 0) + value;
    } else if (name.startsWith('lock_lost')) {
      summary(lock).lost += value;
    } else if (
      name.startsWith('lock_acquire_duration') &&
      name.endsWith('_bucket') &&
      labels.lock_outcome === 'acquired'
    ) {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      const counts = buckets.get(lock) ?? new Map<number, number>();
      counts.set(le, (counts.get(le) ?? 0) + value);
      buckets.set(lock, counts);
    }
  }
  for (const [lock, counts] of buckets) {
    const sorted = [...counts].sort(([a], [b]) => a - b);
    Object.assign(summary(lock), {
      waitP50: quantile(0.5, sorted),
      waitP99: quantile(0.99, sorted),
    });
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The `q` quantile of a cumulative histogram (`[upper bound, count]` ascending), interpolated
 * linearly within its bucket; the highest finite bound when it falls in the `+Inf` bucket.
 */
export function quantile(q: number, buckets: readonly [number, number][]): number | undefined {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [upper, count] of buckets) {
    if (count >= rank) {
      if (upper === Infinity) return lower;
      return lower + ((upper - lower) * (rank - below)) / Math.max(count - below, 1);
    }
    lower = upper;
    below = count;
  }
  return lower;
}

/** The summary as the demo prints it: one line per lock name. */
export function formatLockSummary(locks: readonly LockSummary[], processes: number): string {
  if (locks.length === 0) return '  /metrics showed no lock activity.';
  const ms = (s?: number) => (s === undefined ? '–' : `${(s * 1_000).toFixed(1)} ms`);
  const count = (lock: LockSummary, outcome: string) => lock.outcomes[outcome] ?? 0;
  const rows = locks.map((lock) => [
    lock.name,
    String(count(lock, 'acquired')),
    String(count(lock, 'busy') + count(lock, 'timeout')),
    String(count(lock, 'throttled')),
    String(lock.lost),
    ms(lock.waitP50),
    ms(lock.waitP99),
  ]);
  const header = ['lock.name', 'acquired', 'busy', 'throttled', 'lost', 'wait p50', 'p99'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    '  ' +
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join('  ');
  return [
    `  What the locks did, from GET /metrics of ${processes === 1 ? 'the app' : `its ${processes} processes`}:`,
    '',
    line(header),
    ...rows.map(line),
    '',
    '  busy: refused at once (409); throttled: refused by a holdFor window (429); wait: from the',
    '  call to the grant (a process’s first call also opens its connections), estimated from the',
    '  histogram’s buckets as Prometheus would.',
  ].join('\n');
}

/**
 * `GET /metrics` of each of the app's `processes` (they share one port, so it asks until every
 * process has answered once, by `x-served-by`, or 10 times as many tries went by).
 */
export async function scrapeMetrics(baseUrl: string, processes: number): Promise<string[]> {
  const byProcess = new Map<string, string>();
  for (let tries = 0; byProcess.size < processes && tries < processes * 10; tries++) {
    const response = await fetch(new URL('/metrics', baseUrl));
    const text = await response.text();
    if (!response.ok) throw new Error(`GET /metrics answered ${response.status}: ${text}`);
    byProcess.set(response.headers.get('x-served-by') ?? String(tries), text);
  }
  return [...byProcess.values()];
}
