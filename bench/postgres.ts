/**
 * This library on PostgreSQL beside two floors on the same throwaway PostgreSQL, in one run on
 * one machine (`npm run bench:postgres`):
 *
 * - advisory floor: `pg_advisory_lock` / `pg_advisory_unlock` on a connection checked out of a
 *   pool for the time the lock is held (the least a PostgreSQL lock can cost: two round trips,
 *   no TTL, no fencing, no queue, and a connection held per holder and per waiter);
 * - the `advisory-lock` package: the same functions on a new connection per lock, as it does.
 *
 * Three workloads: uncontended (one caller acquires and releases one key in a loop: latency of
 * the pair), contended (8 instances, 2 callers each, take turns on one key: hand-overs per
 * second) and wake-up (an instance's caller waits while another instance holds: the time from
 * the end of the holder's work to the start of the waiter's, through the release, the notice
 * and the waiter's attempt; for the floor, the unlock and the server waking the blocked call). For this library an instance is a Nest application context with its own pool and
 * listener; for the floors, a pool of its own, or nothing. Progress on stderr, the markdown
 * report on stdout, the figures in bench/results/postgres.json.
 */
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import advisoryLock from 'advisory-lock';
import pg from 'pg';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.apps.json).
import { LockModule, LockService } from 'nestjs-redis-lock';
import { PostgresServer } from '../test/support/postgres-server.js';
import { machineInfo } from './machine.js';
import { median, now, percentile, round } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const UNCONTENDED_ROUNDS = 1_000;
const WARMUP_ROUNDS = 100;
const CONTENDED_MS = 4_000;
const INSTANCES = 8;
const WAKE_ROUNDS = 200;
/** How long the waiter is given to take its place in line before the holder lets go. */
const QUEUE_MS = 20;
const CALLERS_PER_INSTANCE = 2;

/** One way to lock: a factory of instances, each of which runs `fn` under the lock on `key`. */
interface Contender {
  name: string;
  instances(count: number): Promise<{
    run: ((key: string, fn: () => void | Promise<void>) => Promise<void>)[];
    close: () => Promise<void>;
  }>;
}

interface Figures {
  uncontended: { medianMs: number; p99Ms: number; pairsPerSecond: number };
  contended: { handoversPerSecond: number; callers: number };
  wakeUp: { medianMs: number; p99Ms: number };
}

const started = now();
const progress = (message: string) =>
  process.stderr.write(`[${((now() - started) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);

function thisLibrary(url: string): Contender {
  return {
    name: 'nestjs-redis-lock (PostgreSQL)',
    instances: async (count) => {
      const apps: INestApplicationContext[] = [];
      for (let i = 0; i < count; i++) {
        @Module({ imports: [LockModule.forRoot({ postgres: url, keyPrefix: 'bench:' })] })
        class BenchModule {}
        apps.push(await NestFactory.createApplicationContext(BenchModule, { logger: false }));
      }
      return {
        run: apps.map((app) => {
          const locks = app.get(LockService);
          return (key, fn) => locks.using(key, fn, { waitTimeout: 60_000 });
        }),
        close: async () => {
          await Promise.all(apps.map((app) => app.close()));
        },
      };
    },
  };
}

function advisoryFloor(url: string): Contender {
  return {
    name: 'pg_advisory_lock on a pooled connection (floor)',
    instances: async (count) => {
      const pools = Array.from(
        { length: count },
        () => new pg.Pool({ connectionString: url, max: CALLERS_PER_INSTANCE }),
      );
      return {
        run: pools.map((pool) => async (key, fn) => {
          const client = await pool.connect();
          try {
            await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
            await fn();
            await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
          } finally {
            client.release();
          }
        }),
        close: async () => {
          await Promise.all(pools.map((pool) => pool.end()));
        },
      };
    },
  };
}

function advisoryLockPackage(url: string): Contender {
  return {
    name: 'advisory-lock (a connection per lock)',
    instances: async (count) => {
      // A CommonJS module whose export is `default`: Node's ESM import gives its exports object.
      const mutexes = Array.from({ length: count }, () => advisoryLock.default(url));
      return {
        run: mutexes.map((mutexOf) => async (key, fn) => {
          await mutexOf(key).withLock(async () => fn());
        }),
        close: async () => undefined,
      };
    },
  };
}

async function uncontended(contender: Contender): Promise<Figures['uncontended']> {
  const { run, close } = await contender.instances(1);
  try {
    for (let i = 0; i < WARMUP_ROUNDS; i++) await run[0]('warm', () => undefined);
    const times: number[] = [];
    const from = now();
    for (let i = 0; i < UNCONTENDED_ROUNDS; i++) {
      const start = now();
      await run[0]('uncontended', () => undefined);
      times.push(now() - start);
    }
    return {
      medianMs: round(median(times), 3),
      p99Ms: round(percentile(times, 99), 3),
      pairsPerSecond: round(UNCONTENDED_ROUNDS / ((now() - from) / 1000), 0),
    };
  } finally {
    await close();
  }
}

async function contended(contender: Contender): Promise<Figures['contended']> {
  const { run, close } = await contender.instances(INSTANCES);
  try {
    let handovers = 0;
    let inside = 0;
    const until = now() + CONTENDED_MS;
    const section = () => {
      if (++inside > 1) throw new Error('two holders at once');
      inside--;
      handovers++;
    };
    const from = now();
    await Promise.all(
      run.flatMap((instance) =>
        Array.from({ length: CALLERS_PER_INSTANCE }, async () => {
          while (now() < until) await instance('contended', section);
        }),
      ),
    );
    return {
      handoversPerSecond: round(handovers / ((now() - from) / 1000), 0),
      callers: INSTANCES * CALLERS_PER_INSTANCE,
    };
  } finally {
    await close();
  }
}

/** A promise and the function that resolves it. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire = (): void => undefined;
  const done = new Promise<void>((resolve) => (fire = resolve));
  return { done, fire };
}

async function wakeUp(contender: Contender): Promise<Figures['wakeUp']> {
  const { run, close } = await contender.instances(2);
  try {
    const times: number[] = [];
    for (let i = 0; i < WAKE_ROUNDS; i++) {
      const [entered, letGo] = [signal(), signal()];
      let [releasedAt, wokenAt] = [0, 0];
      const holder = run[0]('wake', async () => {
        entered.fire();
        await letGo.done;
        releasedAt = now();
      });
      await entered.done;
      const waiter = run[1]('wake', () => void (wokenAt = now()));
      await new Promise((resolve) => setTimeout(resolve, QUEUE_MS));
      letGo.fire();
      await Promise.all([holder, waiter]);
      times.push(wokenAt - releasedAt);
    }
    return { medianMs: round(median(times), 3), p99Ms: round(percentile(times, 99), 3) };
  } finally {
    await close();
  }
}

function report(results: [string, Figures][]): string {
  const [, ours] = results[0];
  const vs = (value: number, base: number) => `${round(value / base, 1)}×`;
  return [
    '| | uncontended pair, median | p99 | pairs/s | contended hand-overs/s (8 instances × 2 callers) | wake-up after release, median | p99 |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...results.map(
      ([name, { uncontended: u, contended: c, wakeUp: w }]) =>
        `| ${name} | ${u.medianMs} ms (${vs(u.medianMs, ours.uncontended.medianMs)}) | ` +
        `${u.p99Ms} ms | ${u.pairsPerSecond} | ${c.handoversPerSecond} ` +
        `(${vs(c.handoversPerSecond, ours.contended.handoversPerSecond)}) | ` +
        `${w.medianMs} ms (${vs(w.medianMs, ours.wakeUp.medianMs)}) | ${w.p99Ms} ms |`,
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  const machine = machineInfo('throwaway PostgreSQL (fsync off)');
  const server = await PostgresServer.start();
  try {
    const results: [string, Figures][] = [];
    for (const contender of [
      thisLibrary(server.url),
      advisoryFloor(server.url),
      advisoryLockPackage(server.url),
    ]) {
      progress(`${contender.name}: uncontended`);
      const u = await uncontended(contender);
      progress(`${contender.name}: contended`);
      const c = await contended(contender);
      progress(`${contender.name}: wake-up`);
      const w = await wakeUp(contender);
      results.push([contender.name, { uncontended: u, contended: c, wakeUp: w }]);
    }
    console.log(report(results));
    await mkdir(RESULTS_DIR, { recursive: true });
    await writeFile(
      `${RESULTS_DIR}postgres.json`,
      JSON.stringify(
        { date: new Date().toISOString(), machine, results: Object.fromEntries(results) },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
