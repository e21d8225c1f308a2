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
 * ZooKeeper is said to be slower than Redis; the report gives by how much, as ratios. On
 * ZooKeeper, the uncontended and handoff workloads also run on the recipe floor (the
 * documentation's lock recipe on bare node-zookeeper-client sessions, `ZooKeeperRecipeFloor`),
 * and both count the requests the server received per acquire + release (`srvr`). Progress on
 * stderr, the markdown report on stdout, the figures in bench/results/zookeeper.json.
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
import { ZooKeeperRecipeFloor } from './zookeeper/recipe-floor.js';
import { median, now, percentile, round, sleep } from './stats.js';

const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const UNCONTENDED_ROUNDS = 2_000;
const CONTENDED_MS = 5_000;
const CALLERS_PER_SERVICE = 8;
const HANDOFFS = 300;
const WARMUP_ROUNDS = 200;

/** What one backend did on each workload. */
interface BackendFigures {
  uncontended: {
    medianMs: number;
    p99Ms: number;
    pairsPerSecond: number;
    /** ZooKeeper only: requests the server received per acquire + release (`srvr`). */
    requestsPerPair?: number;
  };
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

/** One acquire + release of `key`, on the library or on the recipe floor. */
type Pair = (key: string) => Promise<void>;

/** Packets the ZooKeeper server has received since it started (its `srvr` report). */
async function received(server: ZooKeeperServer): Promise<number> {
  const count = /Received: (\d+)/.exec(await server.srvr())?.[1];
  if (count === undefined) throw new Error('ZooKeeper did not answer srvr');
  return Number(count);
}

async function uncontended(
  pair: Pair,
  server?: ZooKeeperServer,
): Promise<BackendFigures['uncontended']> {
  for (let i = 0; i < WARMUP_ROUNDS; i++) await pair('warm');
  const times: number[] = [];
  const before = server && (await received(server));
  const from = now();
  for (let i = 0; i < UNCONTENDED_ROUNDS; i++) {
    const start = now();
    await pair('uncontended');
    times.push(now() - start);
  }
  const elapsed = now() - from;
  // A session's pings in between are counted too: about one per few seconds.
  const requests = server && before !== undefined && (await received(server)) - before;
  return {
    medianMs: round(median(times), 3),
    p99Ms: round(percentile(times, 99), 3),
    pairsPerSecond: round(UNCONTENDED_ROUNDS / (elapsed / 1000), 0),
    ...(typeof requests === 'number' && {
      requestsPerPair: round(requests / UNCONTENDED_ROUNDS, 2),
    }),
  };
}

/** A lock holder: release() ends the hold. */
interface Held {
  release(): Promise<unknown>;
}

/** Workload 3 on the library, or on the recipe floor: `acquire` by service 0 or 1. */
async function handoffOf(
  acquire: (service: 0 | 1, key: string) => Promise<Held>,
): Promise<BackendFigures['handoff']> {
  const times: number[] = [];
  for (let i = 0; i < HANDOFFS + 20; i++) {
    const [holderService, waiterService] = i % 2 === 0 ? ([0, 1] as const) : ([1, 0] as const);
    const holder = await acquire(holderService, 'handoff');
    const waiting = acquire(waiterService, 'handoff');
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

async function measure(
  name: string,
  options: LockModuleOptions,
  server?: ZooKeeperServer,
): Promise<BackendFigures> {
  const { locks, close } = await services(options);
  try {
    progress(`${name}: uncontended`);
    const u = await uncontended(async (key) => {
      await (await locks[0].acquire(key)).release();
    }, server);
    progress(`${name}: contended`);
    const c = await contended(locks);
    progress(`${name}: handoff`);
    const h = await handoffOf((service, key) =>
      locks[service].acquire(key, { waitTimeout: 30_000 }),
    );
    return { uncontended: u, contended: c, handoff: h };
  } finally {
    await close();
  }
}

/** The uncontended and handoff workloads on the recipe floor: two bare sessions. */
async function measureFloor(server: ZooKeeperServer): Promise<Omit<BackendFigures, 'contended'>> {
  const floors = [
    await ZooKeeperRecipeFloor.connect(server.address, '/floor'),
    await ZooKeeperRecipeFloor.connect(server.address, '/floor'),
  ];
  try {
    progress('ZooKeeper recipe floor: uncontended');
    const u = await uncontended(async (key) => {
      await floors[0].release(await floors[0].acquire(key));
    }, server);
    progress('ZooKeeper recipe floor: handoff');
    const h = await handoffOf(async (service, key) => {
      const path = await floors[service].acquire(key);
      return { release: () => floors[service].release(path) };
    });
    return { uncontended: u, handoff: h };
  } finally {
    for (const floor of floors) floor.close();
  }
}

const ratio = (a: number, b: number) => `${round(a / b, 1)}×`;

function floorReport(zookeeper: BackendFigures, floor: Omit<BackendFigures, 'contended'>): string {
  return [
    '| ZooKeeper | this library | recipe floor | library vs floor |',
    '| --- | --- | --- | --- |',
    `| uncontended acquire + release, median | ${zookeeper.uncontended.medianMs} ms | ${floor.uncontended.medianMs} ms | ${ratio(zookeeper.uncontended.medianMs, floor.uncontended.medianMs)} |`,
    `| uncontended acquire + release, p99 | ${zookeeper.uncontended.p99Ms} ms | ${floor.uncontended.p99Ms} ms | ${ratio(zookeeper.uncontended.p99Ms, floor.uncontended.p99Ms)} |`,
    `| requests the server received per acquire + release | ${zookeeper.uncontended.requestsPerPair} | ${floor.uncontended.requestsPerPair} | – |`,
    `| handoff across sessions (release → next grant), median | ${zookeeper.handoff.medianMs} ms | ${floor.handoff.medianMs} ms | ${ratio(zookeeper.handoff.medianMs, floor.handoff.medianMs)} |`,
    `| handoff across sessions, p99 | ${zookeeper.handoff.p99Ms} ms | ${floor.handoff.p99Ms} ms | ${ratio(zookeeper.handoff.p99Ms, floor.handoff.p99Ms)} |`,
  ].join('\n');
}

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
    const zookeeper = await measure(
      'ZooKeeper',
      { zookeeper: { connectionString: zookeeperServer.address, root: '/bench' } },
      zookeeperServer,
    );
    const floor = await measureFloor(zookeeperServer);
    console.log(report(redis, zookeeper));
    console.log(`\n${floorReport(zookeeper, floor)}`);
    await mkdir(RESULTS_DIR, { recursive: true });
    await writeFile(
      `${RESULTS_DIR}zookeeper.json`,
      JSON.stringify(
        { date: new Date().toISOString(), machine, redis, zookeeper, recipeFloor: floor },
        null,
        2,
      ) + '\n',
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
