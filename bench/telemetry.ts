/**
 * What telemetry costs a lock: uncontended acquire + release with `@opentelemetry/api` absent
 * (`off`), with the API but no SDK registered (`api`), with the SDK's meter provider registered
 * (`metrics`: exported every second), and with its tracer provider too (`sdk`: every span
 * through a batch processor), on
 * Redis and on the memory store (where no network hides the library's own CPU). Each mode runs
 * in a process of its own, started the same way; the modes take turns round by round, one
 * process working at a time, median round kept.
 *
 * Run it with `npm run build:apps && node dist-apps/bench/telemetry.js`. Progress goes to stderr, a markdown table to stdout, the figures to
 * bench/results/telemetry.json. `BENCH_QUICK=1` shrinks the run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CONFIG } from './config.js';
import { startRedis } from './redis/server.js';
import { median, round } from './stats.js';
import type {
  InstanceRequest,
  RoundResult,
  TelemetryMode,
} from './workloads/telemetry-instance.js';

const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));
const INSTANCE = fileURLToPath(new URL('./workloads/telemetry-instance.js', import.meta.url));
const HIDE_API = fileURLToPath(new URL('./workloads/hide-otel-api.js', import.meta.url));

const MODES: TelemetryMode[] = ['off', 'api', 'metrics', 'sdk'];
const STORES = ['redis', 'memory'] as const;
const ROUNDS = CONFIG.quick ? 2 : 7;
const ROUND_MS = { redis: CONFIG.quick ? 400 : 1_000, memory: CONFIG.quick ? 200 : 500 };

const progress = (message: string) => process.stderr.write(`${message}\n`);

/** A mode's process, answering one request at a time. */
class Instance {
  private constructor(
    readonly mode: TelemetryMode,
    private readonly child: ChildProcess,
  ) {}

  static async start(mode: TelemetryMode, url: string): Promise<Instance> {
    const child = fork(INSTANCE, [mode, url], {
      execArgv: mode === 'off' ? ['--import', HIDE_API] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const [message] = (await once(child, 'message')) as [{ ready?: true }];
    if (!message.ready) throw new Error(`The ${mode} process did not start`);
    return new Instance(mode, child);
  }

  async run(request: InstanceRequest): Promise<RoundResult> {
    const answer = once(this.child, 'message') as Promise<[RoundResult]>;
    this.child.send(request);
    return (await answer)[0];
  }

  async stop(): Promise<void> {
    const exited = once(this.child, 'exit');
    this.child.send({ stop: true } satisfies InstanceRequest);
    await exited;
  }
}

interface ModeFigures {
  opsPerS: number;
  cpuUsPerOp: number;
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const redis = await startRedis();
  const instances: Instance[] = [];
  try {
    for (const mode of MODES) instances.push(await Instance.start(mode, redis.url));
    const samples = new Map<string, RoundResult[]>();
    for (let r = 0; r < ROUNDS; r++) {
      progress(`Round ${r + 1} of ${ROUNDS}`);
      // Each round starts with another mode, so that none always follows the same one.
      const order = instances.map((_, i) => instances[(i + r) % instances.length]);
      for (const store of STORES) {
        for (const instance of order) {
          const result = await instance.run({ round: store, ms: ROUND_MS[store] });
          const key = `${store}/${instance.mode}`;
          samples.set(key, [...(samples.get(key) ?? []), result]);
        }
      }
    }
    const figures: Record<string, Record<TelemetryMode, ModeFigures>> = {};
    for (const store of STORES) {
      figures[store] = Object.fromEntries(
        MODES.map((mode) => {
          const rounds = samples.get(`${store}/${mode}`)!;
          return [
            mode,
            {
              opsPerS: round(median(rounds.map((s) => (s.ops / s.ms) * 1_000)), 0),
              cpuUsPerOp: round(median(rounds.map((s) => s.cpuUs / s.ops)), 1),
            },
          ];
        }),
      ) as Record<TelemetryMode, ModeFigures>;
    }
    process.stdout.write(report(figures) + '\n');
    await mkdir(RESULTS_DIR, { recursive: true });
    const file = `${RESULTS_DIR}telemetry.json`;
    // The load says how far to trust the figures: other processes blur every one of them.
    const results = { startedAt, loadAverage: loadavg(), rounds: ROUNDS, roundMs: ROUND_MS };
    await writeFile(file, await formatJson(file, { ...results, figures }));
  } finally {
    await Promise.all(instances.map((instance) => instance.stop()));
    await redis.stop();
  }
}

/** The JSON as the repository's Prettier writes it, as bench.ts does; plain JSON without it. */
async function formatJson(file: string, value: unknown): Promise<string> {
  const json = JSON.stringify(value, null, 2) + '\n';
  try {
    const prettier = await import('prettier');
    const options = await prettier.resolveConfig(file);
    return await prettier.format(json, { ...options, filepath: file });
  } catch {
    return json;
  }
}

function report(figures: Record<string, Record<TelemetryMode, ModeFigures>>): string {
  const lines = [
    '| Uncontended acquire + release | no API (off) | API, no SDK | SDK: metrics | SDK: metrics and spans |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const store of STORES) {
    const { off } = figures[store];
    const cell = (f: ModeFigures) =>
      `${f.opsPerS.toLocaleString('en')} ops/s (${round(f.opsPerS / off.opsPerS, 3)} ×), ` +
      `${f.cpuUsPerOp} µs CPU/op`;
    lines.push(`| ${store} | ${MODES.map((mode) => cell(figures[store][mode])).join(' | ')} |`);
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  process.stderr.write(
    `\nBenchmark failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exitCode = 1;
});
