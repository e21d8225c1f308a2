/**
 * `npm run bench`: this library against the locks a user would pick instead, and against the
 * floor of what any Redis lock must do, on one Redis, in one process run; then the same locks
 * in N instance processes of their own contending for one key (workload 10); then RedLock (this
 * library and the `redlock` package over 3 and 5 masters, against one of those masters alone)
 * on throwaway masters the benchmark starts for it, and this library's `waitForReplicas` on a
 * throwaway master with one replica; and this library on each Redis client library it runs on
 * (ioredis, iovalkey, node-redis, GLIDE). Progress goes to stderr, the markdown
 * report to stdout, every figure to bench/results/latest.json.
 *
 * Exits 1 only when something is broken (a crash, lost updates, overlapping holders); a missed
 * performance target is a FAIL line in the report, not an error.
 */
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { NaiveLoopAdapter } from './adapters/naive-loop.js';
import { RawFloorAdapter } from './adapters/raw-floor.js';
import { RedisSemaphoreAdapter } from './adapters/redis-semaphore.js';
import { RedlockAdapter } from './adapters/redlock.js';
import { SpinFloorAdapter } from './adapters/spin-floor.js';
import { ThisLibraryAdapter } from './adapters/this-library.js';
import type { LockAdapter } from './adapters/types.js';
import { CONFIG } from './config.js';
import { machineInfo } from './machine.js';
import { BenchClients, startRedis } from './redis/server.js';
import { killAllServers, serversStarting, startsSettled } from './redis/throwaway.js';
import { formatReport } from './report.js';
import type { BenchResults } from './results.js';
import { now, round, sleep } from './stats.js';
import { writeCharts } from './charts.js';
import { checklist } from './targets.js';
import { burstRound, runBurst } from './workloads/burst.js';
import { runClients } from './workloads/clients.js';
import { contendedRound, runContended } from './workloads/contended.js';
import { runCurves } from './workloads/curves.js';
import { runDecorator } from './workloads/decorator.js';
import { runHeldLocks } from './workloads/held-locks.js';
import { runInstances } from './workloads/instances.js';
import { runRedlock } from './workloads/redlock.js';
import { runReplicas } from './workloads/replicas.js';
import { runParallel, runUncontended, throughputRound } from './workloads/throughput.js';

const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const started = now();
const progress = (message: string) =>
  process.stderr.write(`[${((now() - started) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);

/** Everything that must be closed at the end, last opened first. */
const cleanups: (() => Promise<void>)[] = [];

async function main(): Promise<number> {
  const startedAt = new Date().toISOString();
  const redis = await startRedis();
  cleanups.push(() => redis.stop());
  progress(`Redis at ${redis.external ? 'REDIS_URL' : redis.url}`);
  const clients = new BenchClients(redis.url);
  await clients.connect();
  cleanups.push(() => clients.close());
  const machine = machineInfo(await clients.redisVersion());

  const url = redis.url;
  const library = await ThisLibraryAdapter.create(url);
  const redlock = await RedlockAdapter.create('redlock', url);
  const sesame = await RedlockAdapter.create('sesame-redlock', url);
  const semaphore = await RedisSemaphoreAdapter.create(url);
  const floor = await RawFloorAdapter.create(url);
  const naive = await NaiveLoopAdapter.create(url);
  const spin = await SpinFloorAdapter.create(url);
  const all: LockAdapter[] = [library, redlock, sesame, semaphore, floor, naive, spin];
  for (const adapter of all) cleanups.push(() => adapter.close());
  const nonWaiting: LockAdapter[] = [library, redlock, sesame, semaphore, floor];
  const contendedSet: LockAdapter[] = [library, redlock, sesame, semaphore];
  const burstSet: LockAdapter[] = [library, redlock, sesame, semaphore, naive, spin];

  // Warm-up: JIT, scripts loaded into Redis (each one's first EVALSHA falls back to EVAL),
  // subscriber connections opened, so that no measured round pays for a first time.
  progress('Warming up every implementation');
  const { warmup } = CONFIG;
  for (const adapter of nonWaiting) {
    await throughputRound(adapter, 1, warmup.ms, 'warm:1');
    await throughputRound(adapter, CONFIG.parallel.callers, warmup.ms, 'warm:64');
  }
  for (const adapter of [...contendedSet, naive, spin]) {
    await contendedRound(
      adapter,
      clients,
      'warm:contended',
      warmup.contendedWorkers,
      warmup.contendedSections,
    );
    await burstRound(adapter, clients, 'warm:burst', 4);
  }
  // The renew script too: hold one lock with a short ttl through a few watchdog renewals.
  const renewed = await library.acquire('warm:renew', 60, 0);
  await sleep(100);
  await library.release(renewed);
  for (const call of [
    () => library.decorated.run('warm'),
    () => library.locks.using('dec:warm', () => 0),
  ]) {
    const until = now() + warmup.ms;
    while (now() < until) await call();
  }

  progress('1. Uncontended');
  const uncontended = await runUncontended(nonWaiting, 'uncontended');
  progress(`2. Parallel distinct keys (${CONFIG.parallel.callers} callers)`);
  const parallel = await runParallel(nonWaiting, clients, CONFIG.parallel.callers, 'parallel');
  progress('3. Contended');
  const contended = await runContended(contendedSet, clients);
  // A handoff in the burst follows a 2 ms timer, during which the CPUs may doze off: time the
  // PINGs the same way (back-to-back PINGs on a busy machine are several times faster).
  const rtt = {
    backToBackMs: round(await clients.pingRtt(CONFIG.rttSamples, 0), 4),
    afterIdleMs: round(await clients.pingRtt(CONFIG.rttSamples, CONFIG.burst.holdMs), 4),
  };
  const rttMs = rtt.afterIdleMs;
  progress(
    `4. Burst (PING RTT ${rtt.afterIdleMs} ms after ${CONFIG.burst.holdMs} ms idle, ${rtt.backToBackMs} ms back-to-back)`,
  );
  const burst = await runBurst(burstSet, clients, rttMs);
  const { instances: processes } = CONFIG.instances;
  progress(`10. ${processes} instances (processes of their own) on one key`);
  const instances = await runInstances(
    contendedSet.map((adapter) => adapter.id),
    clients,
    url,
  );
  const curves = await runCurves(
    [library, semaphore, redlock].map((adapter) => adapter.id),
    [library, semaphore, redlock, floor],
    clients,
    url,
    progress,
  );
  const clientRuns = await runClients(clients, url, progress);
  progress('7. Decorator overhead');
  const decorator = await runDecorator(library);
  // On servers of its own, which it starts and stops: before workload 6, which must come last.
  const redlockRun = await runRedlock(progress, redis.external);
  if ('skipped' in redlockRun) progress(`8. RedLock skipped: ${redlockRun.skipped}`);
  // Also on servers of its own (a master and its replica), for the same reason.
  const replicasRun = await runReplicas(progress, redis.external);
  if ('skipped' in replicasRun) progress(`9. waitForReplicas skipped: ${replicasRun.skipped}`);
  // Last: it leaves the most garbage and thousands of keys behind.
  progress(`6. Held-lock scale (${CONFIG.held.locks} locks)`);
  const held = await runHeldLocks(library, floor, clients);

  const byId = <T>(results: Map<LockAdapter, T>) =>
    Object.fromEntries([...results].map(([adapter, value]) => [adapter.id, value]));
  const partial: Omit<BenchResults, 'checklist' | 'violations'> = {
    startedAt,
    durationS: 0,
    machine,
    externalRedis: redis.external,
    config: CONFIG,
    implementations: all.map(({ id, name, waiting }) => ({ id, name, waiting })),
    floorId: floor.id,
    spinFloorId: spin.id,
    libraryId: library.id,
    rtt,
    uncontended: byId(uncontended),
    parallel: byId(parallel),
    contended: byId(contended),
    burst: byId(burst),
    instances,
    curves,
    decorator,
    held,
    redlock: redlockRun,
    replicas: replicasRun,
    clients: clientRuns,
  };
  const violations = [
    ...Object.entries(partial.contended).map(([id, c]) => [id, 'contended', c] as const),
    ...Object.entries(partial.burst).map(([id, b]) => [id, 'burst', b] as const),
    ...Object.entries(partial.instances).map(([id, c]) => [id, 'instances', c] as const),
    ...Object.entries(clientRuns.instances).map(([id, c]) => [id, 'instances', c] as const),
    ...Object.entries(curves.instances).flatMap(([id, points]) =>
      points.map((point) => [id, `the ${point.size}-instance curve`, point] as const),
    ),
    ...Object.entries('skipped' in redlockRun ? {} : redlockRun.contended).map(
      ([id, c]) => [id, 'RedLock contended', c] as const,
    ),
  ]
    .filter(([, , res]) => ('lostUpdates' in res && res.lostUpdates > 0) || res.overlaps > 0)
    .map(
      ([id, workload, res]) =>
        `${id} in ${workload}: ${'lostUpdates' in res ? `${res.lostUpdates} lost updates, ` : ''}${res.overlaps} overlaps`,
    );

  progress('Closing connections');
  await closeAll();
  const results: BenchResults = {
    ...partial,
    durationS: round((now() - started) / 1000, 1),
    checklist: checklist(partial),
    violations,
  };
  process.stdout.write(formatReport(results) + '\n');
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}latest.json`;
  await writeFile(file, await formatJson(file, results));
  progress(`Figures written to ${file}`);
  const charts = await writeCharts(results, RESULTS_DIR);
  progress(`Charts written to ${RESULTS_DIR}: ${charts.join(', ')}`);
  return violations.length > 0 ? 1 : 0;
}

/**
 * The JSON as the repository's Prettier would write it, so that the file passes
 * `npm run format:check` if it is committed; plain JSON if Prettier cannot be loaded.
 */
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

async function closeAll(): Promise<void> {
  while (cleanups.length > 0) {
    await cleanups.pop()!().catch((error: unknown) => progress(`While closing: ${String(error)}`));
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    // Every redis-server of ours at once (the single one and workload 8's and 9's masters).
    killAllServers();
    // One still starting is handed out only once it answers: wait for it (at most its 5 s PONG
    // deadline) so that it is killed too, instead of outliving us in its own process group.
    if (serversStarting()) void startsSettled().finally(() => process.exit(130));
    else process.exit(130);
  });
}

main().then(
  (code) => {
    // Everything is closed: the process exits on its own once the event loop is empty.
    process.exitCode = code;
  },
  async (error: unknown) => {
    process.stderr.write(
      `\nBenchmark failed: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    await closeAll();
    process.exitCode = 1;
  },
);
