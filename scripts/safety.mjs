/**
 * `npm run safety`: the full-size run of the multi-process safety checker. Starts its own
 * redis-server, runs the workers and the nemesis for a few minutes, prints the summary, and
 * exits non-zero on any violation. Needs the built library (`npm run build`).
 *
 * Options: --workers N (default 8), --duration S (default 150), --ttl MS (default 400),
 * --unfenced-reads (the resource fences writes only, as `writeFenced` does), --json,
 * --faults a,b,c (the faults to cycle through; default: all of the mode's). The single-Redis
 * mode's faults are kill, stop, drain (SIGTERM: the holder's app drains, finishing its section
 * under the lock), restart and forge (the holder hands its lock off, and forged copies of the
 * handle, one with its fencing token raised and one with its token changed, must be refused
 * before the genuine one is adopted; mutex only), all aimed at the holder, and lag,
 * kill-waiter, short-ttl, unmark, stale-turn (aimed at the waiters of the fair handover; unmark
 * takes the queue mark off a mutex's value, stale-turn tells waiters of grants from before their
 * refusals) and leader (every worker stands in a leader election, whose leader resigns, is
 * SIGTERMed, killed or paused in turn: see test/safety/checker/leader.mjs), and clock-back (the
 * fencing counter moved ahead of the server clock), with --lag MIN-MAX (ms, default
 * 1000-3000). On a mutex it also checks that the lock goes to the callers in the order they
 * took their places in line, and reports the share of grants in that order.
 * --redlock runs the RedLock mode instead: the checker starts --masters N redis-servers
 * (default 5) and stops them at the end, the workers use them with --node-timeout MS (default
 * 100), and the faults are kill, stop, restarts of a minority and of a majority of them, and
 * tick (one master killed or hung, and every worker calling with waitTimeout 0 at one moment,
 * --tick-rounds N times, default 6: somebody must get the lock each time).
 * --kind semaphore:N or --kind rw (one Redis, or ZooKeeper) runs the workers on a semaphore of N
 * permits or a read-write lock instead of a mutex, checked for never more than N inside, or a
 * writer with anyone.
 * --callers N runs N callers in each worker process (default 1), so that a release often hands
 * the lock to a caller of its own process (the same-process handover), the arrival order is
 * checked across callers of one process as across processes, and a drained worker has calls to
 * refuse; kill-waiter is then left out of the default faults.
 * --zookeeper runs the ZooKeeper mode: a ZooKeeper server of its own, which the faults kill
 * holders on, pause them, drain them, restart it, and cut holders off until their session
 * expires; and `leader`, as above (not in the RedLock mode, which refuses elections).
 * --zookeeper --ensemble runs it on a 3-server ensemble of its own instead, whose members reach
 * each other through proxies: the workers reach the followers, and instead of the restart a
 * fault cuts a holder's follower off from the others while it still serves.
 * --postgres runs the PostgreSQL mode: a throwaway PostgreSQL of its own (initdb, pg_ctl), which
 * the faults kill holders on, pause them, drain them, forge their handles (as above), restart it
 * (with its data), cut holders off until their lease ran out (`expire`), and terminate their
 * connections (`terminate`).
 * --client ioredis|iovalkey|node-redis|glide runs the single-Redis mode's workers on that client
 * library (default ioredis), each passing the module a client of its own.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SafetyChecker } from '../test/safety/checker/checker.mjs';
import { formatSummary } from '../test/safety/checker/analyze.mjs';
import { PostgresServer } from '../test/support/postgres-server.js';
import { CHECKER_CLIENTS } from '../test/safety/checker/watched-clients.mjs';
import { assertRedisServerInstalled, RedisServer } from '../test/support/redis-server.js';
import {
  PARTITION_SYNC_LIMIT,
  ZooKeeperEnsemble,
  ZooKeeperServer,
} from '../test/support/zookeeper-server.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '8' },
    duration: { type: 'string', default: '150' },
    ttl: { type: 'string', default: '400' },
    'unfenced-reads': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    redlock: { type: 'boolean', default: false },
    zookeeper: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    ensemble: { type: 'boolean', default: false },
    masters: { type: 'string', default: '5' },
    'node-timeout': { type: 'string', default: '100' },
    'tick-rounds': { type: 'string', default: '6' },
    faults: { type: 'string' },
    lag: { type: 'string', default: '1000-3000' },
    kind: { type: 'string', default: 'mutex' },
    callers: { type: 'string', default: '1' },
    client: { type: 'string', default: 'ioredis' },
  },
});
const client = /** @type {import('../test/safety/checker/watched-clients.mjs').CheckerClient} */ (
  values.client
);
if (!CHECKER_CLIENTS.includes(client)) {
  throw new Error(`--client ${values.client}: one of ${CHECKER_CLIENTS.join(', ')}`);
}
if (client !== 'ioredis' && (values.redlock || values.zookeeper)) {
  throw new Error(`--client ${client} goes with the single-Redis mode only`);
}
// iovalkey runs on the ioredis adapter (the same API); the others on an adapter of their own.
const adapter = {
  ioredis: 'ioredis',
  iovalkey: 'ioredis',
  'node-redis': 'node-redis',
  glide: 'glide',
}[client];
if (!existsSync(new URL(`../dist/store/redis/${adapter}/`, import.meta.url))) {
  throw new Error(
    `--client ${client}: this build has no ${adapter} adapter (dist/store/redis/${adapter}/)`,
  );
}
const [lagMin, lagMax] = values.lag.split('-').map(Number);
const kind = values.kind.startsWith('semaphore:')
  ? { limit: Number(values.kind.slice('semaphore:'.length)) }
  : values.kind === 'rw'
    ? /** @type {const} */ ('rw')
    : undefined;
if (!kind && values.kind !== 'mutex')
  throw new Error(`--kind ${values.kind}: mutex, semaphore:N or rw`);

if (!values.zookeeper && !values.postgres) assertRedisServerInstalled();
// The RedLock mode's masters are the checker's own; the single-Redis mode's server is ours, and
// so is the ZooKeeper mode's.
if (values.ensemble && !values.zookeeper) throw new Error('--ensemble goes with --zookeeper');
const ensemble = values.ensemble
  ? await ZooKeeperEnsemble.start(3, { syncLimit: PARTITION_SYNC_LIMIT, partitionable: true })
  : undefined;
const zookeeper = values.zookeeper && !ensemble ? await ZooKeeperServer.start() : undefined;
const postgres = values.postgres ? await PostgresServer.start() : undefined;
const redis =
  values.redlock || values.zookeeper || values.postgres ? undefined : await RedisServer.start();
/** @returns {Partial<import('../test/safety/checker/checker.mjs').CheckerOptions>} */
function mode() {
  if (ensemble) return { zookeeper: { ensemble } };
  if (zookeeper) return { zookeeper: { server: zookeeper } };
  if (postgres) return { postgres: { server: postgres } };
  if (redis) return { redis, client };
  return {
    redlock: { masters: Number(values.masters), nodeTimeout: Number(values['node-timeout']) },
  };
}
let exitCode = 1;
try {
  const checker = new SafetyChecker({
    ...mode(),
    ...(kind ? { kind } : {}),
    callers: Number(values.callers),
    workers: Number(values.workers),
    ttl: Number(values.ttl),
    durationMs: Number(values.duration) * 1000,
    gapMs: 1_000,
    tailMs: 1_000,
    fenceReads: !values['unfenced-reads'],
    ...(values.faults
      ? {
          faults: /** @type {import('../test/safety/checker/checker.mjs').FaultKind[]} */ (
            values.faults.split(',')
          ),
        }
      : {}),
    lagMs: [lagMin, lagMax],
    tickRounds: Number(values['tick-rounds']),
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`),
  });
  const result = await checker.run();
  console.log(formatSummary(result));
  if (values.json) console.log(JSON.stringify(result, null, 2));
  exitCode = result.ok ? 0 : 1;
} finally {
  await redis?.stop();
  await zookeeper?.stop();
  await postgres?.stop();
  await ensemble?.stop();
}
process.exitCode = exitCode;
