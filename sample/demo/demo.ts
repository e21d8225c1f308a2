/**
 * The one-command demo: starts the sample as several processes sharing one Redis (or, without
 * Redis, once in this process), fires concurrent requests at it, and prints what the locks
 * made of them. Exits 0 when every locked scenario behaved, 1 otherwise.
 *
 * Redis: REDIS_URL if set; else a throwaway `redis-server` when one is on PATH; else the
 * library's in-memory store in this single process.
 */
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createApp } from '../src/app.factory.js';
import { redactUrl } from '../src/sample.config.js';
import { Progress } from './progress.js';
import { formatLockSummary, scrapeMetrics, summarizeLocks } from './metrics-summary.js';
import { formatReport } from './report.js';
import { runScenarios } from './scenarios.js';
import { freePort, redisServerOnPath, ThrowawayRedis } from './throwaway-redis.js';

const WORKERS = 2;
const WORKER_BOOT_TIMEOUT_MS = 20_000;
const WORKER_STOP_TIMEOUT_MS = 5_000;

/** A failure the demo explains in its message, with no stack trace to read. */
class DemoError extends Error {}

interface Resource {
  name: string;
  stop(): Promise<void>;
  /** Kills at once, synchronously: the last resort while this process exits. */
  kill(): void;
}

interface RunningApp {
  mode: string;
  baseUrl: string;
  /** How many processes serve it. */
  processes: number;
}

const progress = new Progress();
const resources: Resource[] = [];
let stopping: Promise<void> | undefined;
let interrupted = false;

async function main(): Promise<number> {
  console.log('\nnestjs-redis-lock demo\n');
  const app = await startApp();
  const outcomes = await runScenarios({ baseUrl: app.baseUrl }, progress.step);
  const metrics = await progress.step('Reading what the locks did from GET /metrics', () =>
    scrapeMetrics(app.baseUrl, app.processes),
  );
  await progress.step(`Stopping ${resources.map((r) => r.name).join(' and ')}`, stopAll);
  console.log(formatReport(app.mode, outcomes));
  console.log(formatLockSummary(summarizeLocks(metrics), metrics.length) + '\n');
  return outcomes.checks.every((c) => c.passed) ? 0 : 1;
}

async function startApp(): Promise<RunningApp> {
  let redisUrl: string;
  let where: string;
  if (process.env.REDIS_URL) {
    const url = (redisUrl = process.env.REDIS_URL);
    await progress.step('Checking the Redis at REDIS_URL', () => checkRedis(url));
    where = `the Redis at ${redactUrl(redisUrl)} (REDIS_URL)`;
  } else if (redisServerOnPath()) {
    const redis = await progress.step('Starting a throwaway redis-server', () =>
      ThrowawayRedis.start(),
    );
    resources.push({ name: 'redis-server', stop: () => redis.stop(), kill: () => redis.killNow() });
    redisUrl = redis.url;
    where = `a throwaway redis-server on 127.0.0.1:${redis.port}`;
  } else {
    return startInProcess();
  }
  const port = await freePort();
  await progress.step(`Starting ${WORKERS} app processes (node:cluster, port ${port})`, () =>
    startWorkers(WORKERS, { REDIS_URL: redisUrl, PORT: String(port), HOST: '127.0.0.1' }),
  );
  return {
    mode: `${WORKERS} app processes (node:cluster, one port) sharing ${where}`,
    baseUrl: `http://127.0.0.1:${port}`,
    processes: WORKERS,
  };
}

/** Fails fast, and says why, when REDIS_URL points to no Redis. */
async function checkRedis(url: string): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let cause: unknown;
  client.on('error', (error) => (cause = error));
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    const reason = cause instanceof Error ? cause.message : String(error);
    throw new DemoError(`Cannot reach the Redis at ${redactUrl(url)} (REDIS_URL): ${reason}`);
  } finally {
    client.disconnect();
  }
}

async function startInProcess(): Promise<RunningApp> {
  console.log(
    'REDIS_URL is unset and there is no redis-server on PATH, so the demo falls back to the\n' +
      "library's in-memory store and runs the app once, in this process. The locks then only\n" +
      'exclude within this process. Install Redis (e.g. `apt-get install redis-server` or\n' +
      '`brew install redis`) or set REDIS_URL to see them work across processes.\n',
  );
  const app = await progress.step(
    'Starting the app in this process (in-memory store)',
    async () => {
      const app = await createApp({}, ['warn', 'error']);
      await app.listen(0, '127.0.0.1');
      return app;
    },
  );
  resources.push({ name: 'the app', stop: () => app.close(), kill: () => undefined });
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    mode: 'memory fallback: 1 process, locks and data in memory (no Redis available)',
    baseUrl: `http://127.0.0.1:${port}`,
    processes: 1,
  };
}

async function startWorkers(count: number, env: Record<string, string>): Promise<void> {
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./worker.js', import.meta.url)) });
  const workers = Array.from({ length: count }, () => cluster.fork(env));
  resources.unshift({
    name: 'the app processes',
    stop: () => Promise.all(workers.map(stopWorker)).then(() => undefined),
    kill: () => workers.forEach((w) => w.isDead() || w.process.kill('SIGKILL')),
  });
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) console.error(`\nApp process ${worker.process.pid} exited (${signal ?? code}).`);
  });
  await Promise.all(workers.map(ready));
}

/** Resolves once the worker listens; rejects if it exits or takes too long first. */
function ready(worker: Worker): Promise<void> {
  return new Promise((resolve, reject) => {
    const finish = (error?: Error) => {
      clearTimeout(timer);
      worker.off('message', onMessage).off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    const onMessage = (message: { type?: string }) => message?.type === 'ready' && finish();
    const onExit = (code: number, signal: string | null) =>
      finish(
        new DemoError(
          `An app process exited (${signal ?? `code ${code}`}) before it listened; see its output`,
        ),
      );
    const timer = setTimeout(
      () =>
        finish(new DemoError(`An app process did not listen within ${WORKER_BOOT_TIMEOUT_MS} ms`)),
      WORKER_BOOT_TIMEOUT_MS,
    );
    worker.on('message', onMessage).on('exit', onExit);
  });
}

/** SIGTERM (the app closes and releases its locks), then SIGKILL if it takes too long. */
async function stopWorker(worker: Worker): Promise<void> {
  if (worker.isDead()) return;
  const exited = once(worker, 'exit');
  worker.process.kill('SIGTERM');
  const timer = setTimeout(() => worker.process.kill('SIGKILL'), WORKER_STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** Stops everything the demo started, the app before its Redis; safe to call more than once. */
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    for (const resource of resources) {
      try {
        await resource.stop();
      } catch (error) {
        console.error(`Could not stop ${resource.name}: ${String(error)}`);
        resource.kill();
      }
    }
  })();
  return stopping;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(1);
    interrupted = true;
    progress.interrupt();
    console.error(`\n${signal}: stopping what the demo started (again to force)…`);
    void stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}
process.on('exit', () => resources.forEach((r) => r.kill()));

let exitCode = 1;
try {
  exitCode = await main();
} catch (error) {
  if (interrupted) await new Promise(() => undefined);
  progress.interrupt();
  const text =
    error instanceof DemoError
      ? error.message
      : (error instanceof Error && error.stack) || String(error);
  console.error(`\nThe demo failed: ${text}`);
  await stopAll();
}
process.exit(exitCode);
