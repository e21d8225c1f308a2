/**
 * `npm run bench:zookeeper`: this library on ZooKeeper beside the same library on Redis, in one
 * run on one machine, each on a throwaway server of its own (a redis-server, a standalone
 * ZooKeeper). Two lock services per backend (two Nest application contexts, so two Redis
 * connection sets or two ZooKeeper sessions), measured on three workloads:
 *
 * - uncontended: one caller acquires and releases one key in a loop (latency of the pair);
 * - contended: 8 callers in each service take turns on one key (`using`, no work): hand-overs
 *   per second;
 * - handoff: a holder in one service releases while a caller of the other waits: from the
 *   release call to the waiter's grant (both in this process, on one monotonic clock).
 *
 * ZooKeeper is said to be slower than Redis; the report gives by how much, as ratios. Progress
 * on stderr, the markdown report on stdout, the figures in bench/results/zookeeper.json.
 */
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.apps.json).
import { LockModule, LockService, type LockModuleOptions } from 'nestjs-redis-lock';
import { ZooKeeperServer } from '../test/support/zookeeper-server.js';
import { killAllServers, startServer, stopServer } from './redis/throwaway.js';
import { machineInfo } from './machine.js';
import { median, now, percentile, round, sleep } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const UNCONTENDED_ROUNDS = 2_000;
const CONTENDED_MS = 5_000;
const CALLERS_PER_SERVICE = 8;
const HANDOFFS = 300;
const WARMUP_ROUNDS = 200;

/** What one backend did on each workload. */
interface BackendFigures {
  uncontended: { medianMs: number; p99Ms: number; pairsPerSecond: number };
  contended: { handoversPerSecond: number; callers: number };
  handoff: { medianMs: number; p99Ms: number };
}

const started = now();
const progress = (message: string) =>
  process.stderr.write(`[${((now() - started) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);

/** Two lock services on one backend. */
async function services(
  options: LockModuleOptions,
): Promise<{ locks: LockService[]; close: () => Promise<void> }> {
  const apps: INestApplicationContext[] = [];
  for (let i = 0; i < 2; i++) {
    @Module({ imports: [LockModule.forRoot(options)] })
    class BenchModule {}
    apps.push(await NestFactory.createApplicationContext(BenchModule, { logger: false }));
  }
  return {
    locks: apps.map((app) => app.get(LockService)),
    close: async () => {
      await Promise.all(apps.map((app) => app.close()));
    },
  };
}

async function uncontended(locks: LockService): Promise<BackendFigures['uncontended']> {
  for (let i = 0; i < WARMUP_ROUNDS; i++) await (await locks.acquire('warm')).release();
  const times: number[] = [];
  const from = now();
  for (let i = 0; i < UNCONTENDED_ROUNDS; i++) {
    const start = now();
    const lock = await locks.acquire('uncontended');
    await lock.release();
    times.push(now() - start);
  }
  return {
    medianMs: round(median(times), 3),
    p99Ms: round(percentile(times, 99), 3),
    pairsPerSecond: round(UNCONTENDED_ROUNDS / ((now() - from) / 1000), 0),
  };
}

async function contended(locks: LockService[]): Promise<BackendFigures['contended']> {
  let handovers = 0;
  let inside = 0;
  const until = now() + CONTENDED_MS;
  const caller = async (service: LockService) => {
    while (now() < until) {
      await service.using(
        'contended',
        () => {
          if (++inside > 1) throw new Error('two holders at once');
          inside--;
          handovers++;
        },
        { waitTimeout: 30_000 },
      );
    }
  };
  const from = now();
  await Promise.all(
    locks.flatMap((service) => Array.from({ length: CALLERS_PER_SERVICE }, () => caller(service))),
  );
  return {
    handoversPerSecond: round(handovers / ((now() - from) / 1000), 0),
    callers: CALLERS_PER_SERVICE * locks.length,
  };
}

async function handoff([first, second]: LockService[]): Promise<BackendFigures['handoff']> {
  const times: number[] = [];
  for (let i = 0; i < HANDOFFS + 20; i++) {
    const [holderService, waiterService] = i % 2 === 0 ? [first, second] : [second, first];
    const holder = await holderService.acquire('handoff');
    const waiting = waiterService.acquire('handoff', { waitTimeout: 30_000 });
    // The waiter is in line (its node created, or its place queued) before the release.
    await sleep(5);
    const releasedAt = now();
    await holder.release();
    const next = await waiting;
    const took = now() - releasedAt;
    if (i >= 20) times.push(took);
    await next.release();
  }
  return { medianMs: round(median(times), 3), p99Ms: round(percentile(times, 99), 3) };
}

async function measure(name: string, options: LockModuleOptions): Promise<BackendFigures> {
  const { locks, close } = await services(options);
  try {
    progress(`${name}: uncontended`);
    const u = await uncontended(locks[0]);
    progress(`${name}: contended`);
    const c = await contended(locks);
    progress(`${name}: handoff`);
    const h = await handoff(locks);
    return { uncontended: u, contended: c, handoff: h };
  } finally {
    await close();
  }
}

const ratio = (a: number, b: number) => `${round(a / b, 1)}×`;

function report(redis: BackendFigures, zookeeper: BackendFigures): string {
  return [
    '| workload | Redis | ZooKeeper | ZooKeeper vs Redis |',
    '| --- | --- | --- | --- |',
    `| uncontended acquire + release, median | ${redis.uncontended.medianMs} ms | ${zookeeper.uncontended.medianMs} ms | ${ratio(zookeeper.uncontended.medianMs, redis.uncontended.medianMs)} slower |`,
    `| uncontended acquire + release, p99 | ${redis.uncontended.p99Ms} ms | ${zookeeper.uncontended.p99Ms} ms | ${ratio(zookeeper.uncontended.p99Ms, redis.uncontended.p99Ms)} slower |`,
    `| uncontended pairs per second | ${redis.uncontended.pairsPerSecond} | ${zookeeper.uncontended.pairsPerSecond} | ${ratio(redis.uncontended.pairsPerSecond, zookeeper.uncontended.pairsPerSecond)} fewer |`,
    `| contended hand-overs per second (${redis.contended.callers} callers, 2 services) | ${redis.contended.handoversPerSecond} | ${zookeeper.contended.handoversPerSecond} | ${ratio(redis.contended.handoversPerSecond, zookeeper.contended.handoversPerSecond)} fewer |`,
    `| handoff across services (release → next grant), median | ${redis.handoff.medianMs} ms | ${zookeeper.handoff.medianMs} ms | ${ratio(zookeeper.handoff.medianMs, redis.handoff.medianMs)} slower |`,
    `| handoff across services, p99 | ${redis.handoff.p99Ms} ms | ${zookeeper.handoff.p99Ms} ms | ${ratio(zookeeper.handoff.p99Ms, redis.handoff.p99Ms)} slower |`,
  ].join('\n');
}

async function main(): Promise<void> {
  const machine = machineInfo('throwaway redis-server');
  const redisServer = await startServer();
  const zookeeperServer = await ZooKeeperServer.start();
  try {
    const redis = await measure('Redis', { redis: redisServer.url, keyPrefix: 'bench:zk:' });
    const zookeeper = await measure('ZooKeeper', {
      zookeeper: { connectionString: zookeeperServer.address, root: '/bench' },
    });
    console.log(report(redis, zookeeper));
    await mkdir(RESULTS_DIR, { recursive: true });
    await writeFile(
      `${RESULTS_DIR}zookeeper.json`,
      JSON.stringify({ date: new Date().toISOString(), machine, redis, zookeeper }, null, 2) + '\n',
    );
  } finally {
    await zookeeperServer.stop();
    await stopServer(redisServer);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    killAllServers();
    console.error(error);
    process.exit(1);
  },
);
