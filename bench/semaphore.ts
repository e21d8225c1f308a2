/**
 * `npm run bench:semaphore`: this library's counting semaphore against `redis-semaphore`'s
 * `Semaphore`, on the same workload, in one run: `workers` callers in this process loop on ONE
 * key with `limit` permits, each section a few ms of work; implementations take turns round by
 * round, median round kept. Reports throughput (sections/s), the wait before each permit (p50,
 * p99, max), the Redis requests each connection sent per acquisition and the commands Redis ran
 * per acquisition (scripts' inner commands included), and checks that nobody ever had more than
 * `limit` callers inside.
 *
 * `redis-semaphore` has no `FairSemaphore` any more: its README says the API was removed
 * because its `Semaphore` (a sorted set checked with ZCARD) is the fair one. It runs twice: with
 * its default `retryInterval` (10 ms) and polling every 1 ms, the fastest a user would set.
 *
 * Progress goes to stderr, a markdown table to stdout, the figures to
 * bench/results/semaphore.json. `BENCH_QUICK=1` shrinks the run.
 */
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { Lock } from 'nestjs-redis-lock';
import { Semaphore } from 'redis-semaphore';
import { ThisLibraryAdapter } from './adapters/this-library.js';
import { versionOf } from './adapters/types.js';
import { CONFIG } from './config.js';
import { addCounts, countCommands, type CommandCount } from './redis/commands.js';
import { CommandCounter } from './redis/instrument.js';
import { BenchClients, closeClient, countedClient, startRedis } from './redis/server.js';
import { max, median, now, percentile, round, sleep } from './stats.js';

const RESULTS_FILE = fileURLToPath(new URL('../../bench/results/semaphore.json', import.meta.url));

const SIZES = {
  limit: 4,
  workers: 32,
  sectionsPerWorker: CONFIG.quick ? 5 : 20,
  workMs: 2,
  rounds: CONFIG.quick ? 1 : 5,
  ttl: 10_000,
  waitMs: 30_000,
};

/** A counting semaphore as the workload drives it. */
interface SemaphoreAdapter {
  readonly id: string;
  readonly name: string;
  readonly counter: CommandCounter;
  /** Takes one of `limit` permits of `key`, waiting for one; resolves with what releases it. */
  acquire(key: string): Promise<() => Promise<unknown>>;
  close(): Promise<void>;
}

async function ours(url: string): Promise<SemaphoreAdapter> {
  const library = await ThisLibraryAdapter.create(url);
  return {
    id: 'nestjs-redis-lock',
    name: `${library.name} (limit)`,
    counter: library.counter,
    async acquire(key) {
      const lock: Lock = await library.locks.acquire(key, {
        limit: SIZES.limit,
        ttl: SIZES.ttl,
        waitTimeout: SIZES.waitMs,
      });
      return () => lock.release();
    },
    close: () => library.close(),
  };
}

async function redisSemaphore(url: string, retryInterval?: number): Promise<SemaphoreAdapter> {
  const counter = new CommandCounter();
  const client: Redis = await countedClient(url, counter);
  const version = await versionOf('redis-semaphore');
  return {
    id: retryInterval === undefined ? 'redis-semaphore' : `redis-semaphore-${retryInterval}ms`,
    name:
      `redis-semaphore ${version} Semaphore` +
      (retryInterval === undefined
        ? ' (default retryInterval 10 ms)'
        : ` (retryInterval ${retryInterval} ms)`),
    counter,
    async acquire(key) {
      const semaphore = new Semaphore(client, `bench:rs:${key}`, SIZES.limit, {
        lockTimeout: SIZES.ttl,
        acquireTimeout: SIZES.waitMs,
        ...(retryInterval === undefined ? {} : { retryInterval }),
      });
      await semaphore.acquire();
      return () => semaphore.release();
    },
    close: () => closeClient(client),
  };
}

interface Round {
  makespanMs: number;
  waitsMs: number[];
  /** Most callers inside at once, and times more than `limit` were. */
  mostInside: number;
  excess: number;
  commands: CommandCount;
}

async function round1(
  adapter: SemaphoreAdapter,
  clients: BenchClients,
  key: string,
): Promise<Round> {
  const waitsMs: number[] = [];
  let inside = 0;
  let mostInside = 0;
  let excess = 0;
  const startedAt = now();
  const { commands } = await countCommands(clients, adapter.counter, () =>
    Promise.all(
      Array.from({ length: SIZES.workers }, async () => {
        for (let i = 0; i < SIZES.sectionsPerWorker; i++) {
          const asked = now();
          const release = await adapter.acquire(key);
          waitsMs.push(now() - asked);
          if (++inside > SIZES.limit) excess++;
          mostInside = Math.max(mostInside, inside);
          await sleep(SIZES.workMs);
          inside--;
          await release();
        }
      }),
    ),
  );
  return { makespanMs: now() - startedAt, waitsMs, mostInside, excess, commands };
}

async function main(): Promise<void> {
  const progress = (message: string) => process.stderr.write(`${message}\n`);
  const redis = await startRedis();
  const clients = new BenchClients(redis.url);
  await clients.connect();
  const adapters = [
    await ours(redis.url),
    await redisSemaphore(redis.url),
    await redisSemaphore(redis.url, 1),
  ];
  try {
    progress(`Warming up (${adapters.length} implementations)`);
    for (const adapter of adapters) await round1(adapter, clients, 'warm');
    const rounds = new Map<SemaphoreAdapter, Round[]>(adapters.map((a) => [a, []]));
    for (let r = 0; r < SIZES.rounds; r++) {
      for (const adapter of adapters) {
        progress(`Round ${r + 1}/${SIZES.rounds}: ${adapter.name}`);
        rounds.get(adapter)!.push(await round1(adapter, clients, `round:${r}`));
      }
    }
    const sections = SIZES.workers * SIZES.sectionsPerWorker;
    const results = adapters.map((adapter) => {
      const all = rounds.get(adapter)!;
      const waits = all.flatMap((r) => r.waitsMs);
      const commands = addCounts(all.map((r) => r.commands));
      const acquisitions = sections * all.length;
      return {
        id: adapter.id,
        name: adapter.name,
        sectionsPerSec: round((sections / median(all.map((r) => r.makespanMs))) * 1000, 0),
        waitP50Ms: round(percentile(waits, 50)),
        waitP99Ms: round(percentile(waits, 99)),
        waitMaxMs: round(max(waits)),
        sentPerAcquisition: round(commands.sent / acquisitions),
        serverCommandsPerAcquisition: round(commands.server / acquisitions),
        mostInside: Math.max(...all.map((r) => r.mostInside)),
        excess: all.reduce((sum, r) => sum + r.excess, 0),
      };
    });
    const [base] = results;
    const lines = [
      `Semaphore, ${SIZES.workers} callers on one key of ${SIZES.limit} permits, ` +
        `${SIZES.workMs} ms of work per section, ${SIZES.rounds} rounds (median kept)`,
      '',
      '| implementation | sections/s | wait p50 | wait p99 | wait max | requests / acq. | Redis commands / acq. | most inside |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...results.map(
        (r) =>
          `| ${r.name} | ${r.sectionsPerSec} (${round(r.sectionsPerSec / base.sectionsPerSec)}×) ` +
          `| ${r.waitP50Ms} ms | ${r.waitP99Ms} ms (${round(r.waitP99Ms / base.waitP99Ms)}×) ` +
          `| ${r.waitMaxMs} ms | ${r.sentPerAcquisition} | ${r.serverCommandsPerAcquisition} | ${r.mostInside} |`,
      ),
      '',
      '(×: against this library, in the same run)',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    await mkdir(fileURLToPath(new URL('.', `file://${RESULTS_FILE}`)), { recursive: true });
    await writeFile(
      RESULTS_FILE,
      JSON.stringify({ startedAt: new Date().toISOString(), sizes: SIZES, results }, null, 2) +
        '\n',
    );
    if (results.some((r) => r.excess > 0)) {
      process.stderr.write('More than `limit` callers were inside at once\n');
      process.exitCode = 1;
    }
  } finally {
    for (const adapter of adapters) await adapter.close();
    await clients.close();
    await redis.stop();
  }
}

void main();
