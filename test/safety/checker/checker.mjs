/**
 * The multi-process safety checker: P worker processes contend for one lock key and
 * run a non-atomic read-modify-write of a counter that lives here, in the checker's process,
 * behind a fencing guard; a nemesis injects faults while they run; the history is then checked
 * (see analyze.mjs).
 *
 * Faults, each aimed at the worker that is inside the critical section (the checker intercepts
 * its read of the resource, so the victim certainly holds the lock):
 * - `kill`: SIGKILL the holder; a replacement worker is forked. Nobody may get the lock before
 *   the killed holder's key expires in Redis (its PTTL is read right after the kill).
 * - `stop`: SIGSTOP the holder, answer its read while it is stopped, wait past its TTL until
 *   another holder has written, then SIGCONT. Its signal must abort, its stale write must be
 *   refused by the guard, and `using` must reject with LockLostError.
 * - `drain`: SIGTERM the holder, as a rolling deploy does (see drain.mjs). Its app drains: the
 *   section, kept running for 2–3 TTLs after the signal, must end under the lock (nobody else
 *   acquires before its write, its signal does not abort, its write is accepted, `using`
 *   resolves), its other calls and new ones are refused at once (LockShuttingDownError, counted
 *   as refusals, never as failures), and then the worker exits by itself; a replacement is
 *   forked. Also in the ZooKeeper modes.
 * - `restart`: kill -9 the lock's redis-server and start it again, empty, on the same port
 *   while a holder is inside. The holder must be told (signal aborted, LockLostError), and work
 *   must go on.
 * - `forge`: the holder hands its lock off, and two other workers are presented forged copies
 *   of its handle to adopt, one with its fencing token raised by 10^12, one with its token
 *   changed; then a third adopts the genuine handle (see forge.mjs). Both forgeries must be
 *   refused: nobody may ever hold the lock under a fencing token that no hand-off gave, the
 *   genuine adopter's write must go in, and so must every later holder's (no stale write
 *   accepted, no lost update, tokens in order). Also in the PostgreSQL mode; mutex only.
 *
 * Three more, aimed at the waiters of the fair handover rather than at the holder:
 * - `lag`: each worker then talks to Redis through a TCP proxy of its own, here. For a few
 *   seconds the pub/sub connections of half the waiters lag by several handover leases
 *   (their turn notices come after the reservation expired and someone else took the lock),
 *   and their command connections stall for moments, one stall in three past the
 *   commandTimeout (the waiter's attempt fails, it waits on, and Redis applies the attempt
 *   later). A late notice or a late attempt must never make a second holder: no overlap may
 *   occur that the older holder was not told of first.
 * - `kill-waiter`: SIGKILL one or two waiters while they are queued in Redis (behind at least
 *   two others), having given them a TTL far longer than the handover lease; replacements are
 *   forked. The key may stay unused while the others wait for about a handover lease per dead
 *   waiter, never for a dead waiter's TTL (see {@link DEAD_WAITER_BOUND_MS}).
 * - `short-ttl`: for a few seconds half the workers ask for a TTL of 50–100 ms while the
 *   others work longer in their sections, so that those waiters wait longer than their TTL.
 *   A lock handed over to them must be theirs when they start: none may be reported lost
 *   before its section runs, nor found expired on arrival unless its answer took half its TTL
 *   or more (checked over the whole run, see `grantedButLost`).
 *
 * The single-Redis mode of a mutex also checks the arrival order of fair mode (see
 * arrival-order.mjs): each grant must go to the caller that took its place in the store's line
 * first, whatever its process, several callers per process included (`callers`). The workers
 * date each call and its first attempt on the machine's monotonic clock; an overtaking fails
 * the run only when no fault was in flight while the overtaken caller waited. The summary gives
 * the share of grants in arrival order.
 *
 * RedLock mode (`redlock: { masters: 5 }`): the checker starts N independent redis-servers of its
 * own (and stops them all at the end, however the run ends), and each worker's LockModule gets
 * them all as an array. `kill` and `stop` work as above, except that after a kill nobody may
 * acquire before a MAJORITY of the masters has let the killed holder's copy expire (the
 * quorum-th smallest PTTL). Three more faults, instead of `restart`:
 * - `minority`: kill -9 and restart empty N − quorum masters (2 of 5) drawn at random while a
 *   holder is inside, and keep it inside for 3 TTLs. A lock on a majority of the survivors must
 *   survive this: its signal must not abort, nobody else may acquire, its write must go in.
 *   (Should the lock have been on too few of the survivors, it is really lost; the fault is
 *   then checked as `majority` is, and reported apart.)
 * - `majority`: the same with a quorum of masters (3 of 5): the lock is lost. The holder's read
 *   goes through before the restart and its reply is held back until a newer holder has
 *   written and the holder was told, so that its write comes stale: the holder must be told
 *   (signal aborted, at the latest when its validity runs out), its write must be refused by
 *   the fencing guard, `using` must reject with LockLostError, and work must go on.
 * - `tick`: the workers' calls paused, one master killed or hung (SIGSTOP) in turn, then
 *   `tickRounds` rounds in which every worker calls with `waitTimeout: 0` at one moment, as the
 *   replicas of a scheduled job do (see ticks.mjs). In each round somebody must get the lock
 *   (everybody refused while nobody held it is a violation), and nobody alongside another;
 *   then the master comes back and work goes on.
 *
 * ZooKeeper mode (`zookeeper: { server }`): the workers' LockModules use the given ZooKeeper
 * server (each through a TCP proxy of its own, here), under a root of the run's own. Faults:
 * - `kill`: as above, except that the bound is the killed holder's node: nobody may acquire
 *   while the checker still sees it (it goes when the holder's session expires).
 * - `stop` and `drain`: as above (the stopped holder's session expires, and another takes the
 *   lock; the draining holder's session lasts until its app has closed).
 * - `restart`: kill -9 the ZooKeeper server and start it again on the same port, with its data:
 *   sessions and nodes may survive, but the holder's validity runs out while the server is
 *   down, so it must be told (signal aborted, LockLostError), and work must go on.
 * - `expire`: stall the holder's connection (its proxy) until its session expired and a newer
 *   holder wrote; its read goes through first, its reply held back. The holder must be told
 *   within its validity and BEFORE the next holder acquired, its stale write must be refused,
 *   and `using` must reject with LockLostError.
 * At the end, no node may be left under the run's root.
 *
 * In every mode but RedLock's, `leader` (see leader.mjs): every worker then also stands in one
 * leader election, and each such fault ends the leader's term one way in turn (it resigns, is
 * SIGTERMed, killed, or paused until another leads); epochs must grow, every term be told it
 * ended before the next began (unless its worker was paused or killed), and the fenced
 * resource refuse only deposed leaders.
 * PostgreSQL mode (`postgres: { server }`): the workers' LockModules use the given PostgreSQL
 * (each through a TCP proxy of its own, here, and with an application_name of its own).
 * Faults: `kill` (the bound is the killed holder's row: nobody may acquire before its expiry,
 * read on the database's clock right after the kill), `stop`, `drain`, `forge`, `restart`
 * (kill the server without a checkpoint and start it again with its data: a holder whose
 * renewal gets through within its validity rightly keeps its lock, otherwise it must be told),
 * `expire` (as on ZooKeeper: the holder's connection stalls until its lease ran out and a newer
 * holder wrote; it must be told before the next holder acquired) and `terminate` (the server ends
 * every connection of the holder, again and again for three TTLs, while its read is held: the
 * lease is a row, not a session, so the holder renews on new connections, and must keep its
 * lock and write, or, if it could not renew in time, be told, as any holder). At the end, no
 * row may be left under the run's prefix.
 *
 * On a ZooKeeper ensemble (`zookeeper: { ensemble }`, a partitionable one from
 * test/support/zookeeper-server.js) each worker reaches one follower, the followers in turn;
 * the faults are `kill`, `stop`, `drain` and `expire` as above, and, instead of `restart`:
 * - `partition`: cut the holder's follower off from the other members (their links stall) while
 *   it goes on answering its clients, until a newer holder wrote; then heal it and wait until it
 *   serves again. The leader expires the holder's session while the follower still answers
 *   reads, the dangerous window of a renewal that reads (give the ensemble a `syncLimit` longer
 *   than the workers' sessions). It is checked as `expire` is: the holder must be told within
 *   its validity and BEFORE the next holder acquired.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { analyze } from './analyze.mjs';
import { drainHolder } from './drain.mjs';
import { sharedNow } from './first-attempts.mjs';
import { forgeHandOff, HandOffs } from './forge.mjs';
import { LockServers } from './masters.mjs';
import { randomInt, shuffled } from './random.mjs';
import { endLeadership, LeaderHistory } from './leader.mjs';
import { PostgresProbe } from './postgres-probe.mjs';
import { FencedCounter } from './resource.mjs';
import { TickResults, tickRounds } from './ticks.mjs';
import { ZooKeeperProbe } from './zookeeper-probe.mjs';

/** @import { ReadRequest, WorkerMessage } from './worker.mjs' */
/** @import { ZooKeeperEnsemble, ZooKeeperServer } from '../../support/zookeeper-server.js' */

/**
 * What the checker sends a worker: the reply to its read or write of the resource, an order to
 * stop, or the TTL and work time of its next calls.
 * @typedef {ReadReply | WriteReply | { type: 'stop' } | ({ type: 'config' } & WorkerConfig)} CheckerMessage
 */
/** @typedef {{ type: 'reply', requestId: number, ok: boolean, value: number }} ReadReply */
/** @typedef {{ type: 'reply', requestId: number, ok: boolean }} WriteReply */
/** @typedef {{ ttl?: number, work?: [number, number] }} WorkerConfig */

const WORKER_PATH = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const BUILT_LIBRARY = fileURLToPath(new URL('../../../dist/index.js', import.meta.url));

/**
 * @typedef {'kill' | 'stop' | 'drain' | 'restart' | 'forge' | 'minority' | 'majority' | 'tick' | 'expire' | 'partition' | 'leader' | 'terminate' | 'clock-back' | WaiterFaultKind} FaultKind
 * @typedef {'lag' | 'kill-waiter' | 'short-ttl' | 'unmark' | 'stale-turn'} WaiterFaultKind
 */
/** The faults aimed at the waiters of the fair handover (single Redis). */
const WAITER_FAULT_KINDS = /** @type {const} */ ([
  'lag',
  'kill-waiter',
  'short-ttl',
  'unmark',
  'stale-turn',
]);

/** Every worker's commandTimeout: a command stalled longer is answered late, if at all. */
const COMMAND_TIMEOUT_MS = 1_000;
/** The faults of the single-Redis mode, and its default plan. */
export const FAULT_KINDS = /** @type {const} */ ([
  'kill',
  'stop',
  'drain',
  'restart',
  'forge',
  ...WAITER_FAULT_KINDS,
  'leader',
  'clock-back',
]);
/** The faults of the RedLock mode, and its default plan. */
export const REDLOCK_FAULT_KINDS = /** @type {const} */ ([
  'kill',
  'stop',
  'minority',
  'majority',
  'tick',
]);
/** The faults of the ZooKeeper mode, and its default plan. */
export const ZOOKEEPER_FAULT_KINDS = /** @type {const} */ ([
  'kill',
  'stop',
  'drain',
  'restart',
  'expire',
  'leader',
]);
/** The faults of the PostgreSQL mode, and its default plan. */
export const POSTGRES_FAULT_KINDS = /** @type {const} */ ([
  'kill',
  'stop',
  'drain',
  'forge',
  'restart',
  'expire',
  'terminate',
]);
/** The faults of the ZooKeeper mode on an ensemble, and its default plan. */
export const ZOOKEEPER_ENSEMBLE_FAULT_KINDS = /** @type {const} */ ([
  'kill',
  'stop',
  'drain',
  'expire',
  'partition',
  'leader',
]);

/**
 * How late after its validity ran out a holder may hear that its lock is lost: the worker's
 * watchdog timer and the IPC message to the checker are late by this much at worst on a busy
 * machine (measured well under it on 2 loaded cores).
 */
const TOLD_SLACK_MS = 250;

/**
 * The TTL that `kill-waiter` gives its victims before it kills them while they wait (plus the
 * victim's index, which tells their places in the queue apart).
 */
const VICTIM_TTL = 10_000;

/**
 * How long the key may stay unused while others wait after `kill-waiter`, in ms. A dead waiter
 * whose turn comes holds the key for a handover lease (HANDOVER_LEASE, 500 ms), after which the
 * others' re-checks (armed to fire within a lease of the turn notice) take it: one or two
 * victims cost about 0.5 or 1 s. The bound leaves a second of slack on a loaded machine above
 * two leases, and lies far below the victims' TTL (10 s), which a reservation for a dead
 * waiter's full TTL would cost, and below the queue lease (3 s), which a dead waiter that had
 * to be waited out would cost.
 */
const DEAD_WAITER_BOUND_MS = 2_000;

/** How far ahead of the server clock `clock-back` moves the fencing counter, in ms. */
const CLOCK_BACK_MS = 1_500;

/** How long `unmark` keeps stripping the queue mark from the lock's value, in ms. */
const UNMARK_WINDOW_MS = 3_000;

/** How long `stale-turn` keeps announcing stale grants to the waiters, in ms. */
const STALE_TURN_WINDOW_MS = 3_000;

/**
 * How long the key may stay unused while others wait during `unmark`, in ms. A release that
 * found no mark leaves the queue as it is; the next attempt of any waiter (its fallback
 * re-check, at most 1.25 s away) or a newcomer's first attempt grants the head. The bound
 * leaves a second of slack on a loaded machine, and lies below the holders' TTLs that waiters
 * stranded until an expiry would cost over a run.
 */
const UNMARKED_GAP_BOUND_MS = 2_500;

/**
 * @typedef {object} CheckerOptions
 * @property {{ url: string, port: number, restart(): Promise<void> }} [redis] the lock's Redis
 *   in the single-Redis mode (a RedisServer from test/support/redis-server.js); the checker
 *   restarts it, never stops it
 * @property {{ masters?: number, nodeTimeout?: number }} [redlock] the RedLock mode instead:
 *   the checker starts that many redis-servers (default 5, at least 3) and stops them at the
 *   end; `nodeTimeout` is the workers' per-master timeout (default 100 ms)
 * @property {{ server: { address: string, port: number, restart(): Promise<void> } } | { ensemble: ZooKeeperEnsemble }} [zookeeper]
 *   the ZooKeeper mode instead: the workers lock on this server (a ZooKeeperServer from
 *   test/support/zookeeper-server.js), which the checker restarts, never stops; or on this
 *   partitionable ensemble, whose followers the checker cuts off and heals, never stops
 * @property {{ server: { url: string, port: number, restart(): Promise<void> } }} [postgres]
 *   the PostgreSQL mode instead: the workers lock on this server (a PostgresServer from
 *   test/support/postgres-server.js), which the checker restarts, never stops
 * @property {import('./watched-clients.mjs').CheckerClient} [client] the client library the
 *   workers reach the single Redis with (default ioredis)
 * @property {number} [workers] P, the number of worker processes alive at any time (≥ 6)
 * @property {number} [ttl] the lock's TTL in ms
 * @property {FaultKind[]} [faults] the faults to inject, in order
 * @property {number} [durationMs] keep injecting faults (cycling through `faults`) until then
 * @property {number} [gapMs] quiet time before each fault
 * @property {number} [tailMs] quiet time after the last fault
 * @property {boolean} [fenceReads] whether the resource fences reads too (default true)
 * @property {[number, number]} [lagMs] how late, in ms, `lag` delivers the lagging waiters'
 *   pub/sub traffic (drawn between the two for each fault; default 1–3 s)
 * @property {(line: string) => void} [log] progress lines
 * @property {{ limit: number } | 'rw'} [kind] a semaphore of `limit` permits, or a read-write
 *   lock (one section in three a writer), instead of a mutex; not with RedLock
 * @property {number} [tickRounds] how many rounds each `tick` fault runs (default 6)
 * @property {number} [callers] callers per worker process (default 1), each running sections
 *   of its own: with several, a release hands the lock straight to the next caller of its own
 *   process (the same-process handover), which the faults then meet too; the arrival order is
 *   checked between callers of one process as between processes, and a drained worker has
 *   waiting calls to refuse. Not with `kill-waiter`,
 *   which tells a worker's waiting by its one caller.
 */

/**
 * @typedef {object} Section One critical section, as the checker saw it.
 * @property {number} worker
 * @property {number} token the lock's fencing token
 * @property {string} [lockToken] the lock's own token, the value of its key in Redis
 * @property {number} ttl the TTL the worker asked for
 * @property {number} waitedMs how long the worker waited for the lock
 * @property {number} acquiredSeq
 * @property {number} acquiredAt
 * @property {number} [readSeq]
 * @property {boolean} [readAccepted]
 * @property {number} [writeSeq]
 * @property {boolean} [writeAccepted]
 * @property {boolean} [signalAbortedAtWrite]
 * @property {number} [lostSeq] when the worker reported its signal aborted
 * @property {number} [lostAt]
 * @property {string} [lostReason]
 * @property {number} [releasedSeq]
 * @property {number} [releasedAt]
 * @property {string} [outcome] 'ok' or the name of the error `using` rejected with
 * @property {FaultKind} [fault] the fault this section was the victim of
 * @property {'read' | 'write'} [share] a read-write lock's section: a reader's or a writer's
 * @property {import('./first-attempts.mjs').CallTiming} [call] when its call was made and its
 *   first attempt sent and answered, on the machine's shared monotonic clock
 * @property {number} [acquiredHr] when the checker heard of the grant, on that clock
 * @property {boolean} [adopted] the lock was adopted from a handle (`forge`), not granted
 */

/**
 * @typedef {object} GrantedButLost A call whose lock Redis granted, failed before its section.
 * @property {number} worker
 * @property {'lost' | 'expired'} how reported lost, or found expired when the answer came
 * @property {number} ttl
 * @property {number} [grantRttMs] how long the granting request's answer took
 * @property {string} message the error's
 */

/**
 * @typedef {object} Fault
 * @property {FaultKind} kind
 * @property {number} worker the victim (0 for the faults aimed at waiters)
 * @property {number} token the victim's fencing token (0 for the faults aimed at waiters)
 * @property {number} startSeq
 * @property {number} [endSeq]
 * @property {number} startedAt
 * @property {number} startedHr when it started, on the machine's shared monotonic clock
 * @property {number} [endedHr] when it ended, on that clock
 * @property {boolean} losesLock whether the fault may take the lock from its victim, and so
 *   explain an overlap (all but a `minority` fault that the lock should survive)
 * @property {boolean} keepsOrder whether the lock must still go in arrival order while the fault
 *   runs (`unmark`), so that an overtaking during it is a violation
 * @property {string[]} problems what went wrong (violations)
 * @property {Record<string, unknown>} facts what was measured
 */

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @param {FaultKind} kind
 * @returns {kind is WaiterFaultKind}
 */
function isWaiterFault(kind) {
  return /** @type {readonly FaultKind[]} */ (WAITER_FAULT_KINDS).includes(kind);
}

export class WorkerHandle {
  /**
   * @param {number} id
   * @param {import('node:child_process').ChildProcess} child
   * @param {TcpProxy} [proxy] the worker's own way to Redis, with `lag`
   * @param {ZooKeeperServer} [member] the ensemble member it reaches (through `proxy`)
   */
  constructor(id, child, proxy, member) {
    this.id = id;
    this.child = child;
    this.proxy = proxy;
    this.member = member;
    /**
     * The TTL asked for by the call now waiting for the lock; undefined while none waits.
     * @type {number | undefined}
     */
    this.waitingTtl = undefined;
    this.stderr = '';
    this.ready = false;
    this.exited = false;
    /** The checker killed it on purpose, or told it to stop. */
    this.expectedExit = false;
    this.stopped = false;
    /** @type {number | undefined} when it reported SIGTERM (it drains) */
    this.drainingSeq = undefined;
    /** Its callers make no calls (`tick`), and it said so. */
    this.paused = false;
    this.exitedAt = 0;
    this.exitStatus = '';
  }
}

export class SafetyChecker {
  /** @param {CheckerOptions} options */
  constructor(options) {
    const modes = [options.redis, options.redlock, options.zookeeper, options.postgres];
    if (modes.filter((mode) => mode !== undefined).length !== 1) {
      throw new Error(
        'SafetyChecker: give one of `redis` (one Redis), `redlock` (N masters), `zookeeper` ' +
          'or `postgres`',
      );
    }
    this.redis = options.redis;
    this.postgres = options.postgres;
    /** @type {PostgresProbe | undefined} set up by {@link run} in the PostgreSQL mode */
    this.pgProbe = undefined;
    /** The single Redis's client library in the workers. */
    this.client = options.client ?? 'ioredis';
    this.zookeeper = options.zookeeper;
    this.ensemble =
      options.zookeeper && 'ensemble' in options.zookeeper ? options.zookeeper.ensemble : undefined;
    /** The ZooKeeper mode's root, of this run alone. */
    this.zookeeperRoot = `/checker-${process.pid}-${Date.now().toString(36)}`;
    /** @type {ZooKeeperProbe | undefined} set up by {@link run} in the ZooKeeper mode */
    this.probe = undefined;
    this.masterCount = options.redlock ? Math.max(3, options.redlock.masters ?? 5) : 1;
    this.nodeTimeout = options.redlock?.nodeTimeout ?? 100;
    this.workerCount = Math.max(6, options.workers ?? 6);
    this.ttl = options.ttl ?? 400;
    /** @type {readonly FaultKind[]} */
    const kinds = options.redlock
      ? REDLOCK_FAULT_KINDS
      : this.ensemble
        ? ZOOKEEPER_ENSEMBLE_FAULT_KINDS
        : options.zookeeper
          ? ZOOKEEPER_FAULT_KINDS
          : options.postgres
            ? POSTGRES_FAULT_KINDS
            : FAULT_KINDS;
    /** Callers per worker process. */
    this.callers = options.callers ?? 1;
    this.faultPlan =
      options.faults ??
      // kill-waiter tells a worker's waiting by its one caller.
      // unmark and stale-turn work on a mutex's value (a semaphore's or read-write lock's
      // holds no token of its own), and forge on a mutex's fencing tokens.
      kinds.filter(
        (kind) =>
          (this.callers === 1 || kind !== 'kill-waiter') &&
          ((kind !== 'unmark' && kind !== 'stale-turn' && kind !== 'forge') ||
            options.kind === undefined),
      );
    // A fault of the other mode would test nothing (no single server to restart under RedLock,
    // no minority to lose on one server, no follower to cut off on a standalone ZooKeeper):
    // refuse it rather than pass without testing.
    const foreign = this.faultPlan.filter((kind) => !kinds.includes(kind));
    if (foreign.length > 0) {
      throw new Error(`SafetyChecker: ${foreign.join(', ')} faults need the other mode`);
    }
    this.durationMs = options.durationMs ?? 0;
    this.gapMs = options.gapMs ?? 600;
    this.tickRounds = options.tickRounds ?? 6;
    this.tailMs = options.tailMs ?? 500;
    this.lagMs = options.lagMs ?? [1_000, 3_000];
    // With `lag`, each worker reaches Redis through a proxy of its own in this process; with
    // ZooKeeper, always (for `expire`).
    this.proxied =
      this.faultPlan.includes('lag') || this.zookeeper !== undefined || this.postgres !== undefined;
    /** @type {Promise<void>[]} the proxies of workers that exited, stopping */
    this.proxiesStopping = [];
    this.log = options.log ?? (() => undefined);
    this.keyPrefix = `checker:${process.pid}:${Date.now().toString(36)}:`;
    this.key = 'counter';
    if (this.callers > 1 && this.faultPlan.includes('kill-waiter')) {
      throw new Error('SafetyChecker: kill-waiter needs one caller per worker');
    }
    if (options.kind && options.redlock) {
      throw new Error('SafetyChecker: RedLock has no semaphores and read-write locks');
    }
    /** The semaphore's limit, 1 for a mutex or a read-write lock. */
    this.limit = options.kind && options.kind !== 'rw' ? options.kind.limit : 1;
    /** @type {'mutex' | 'semaphore' | 'rw'} */
    this.kind = options.kind === 'rw' ? 'rw' : options.kind ? 'semaphore' : 'mutex';
    this.resource = new FencedCounter({ fenceReads: options.fenceReads ?? true, kind: this.kind });
    this.seq = 0;
    /** @type {Map<number, WorkerHandle>} */
    this.workers = new Map();
    this.nextWorkerId = 1;
    this.processesStarted = 0;
    /** @type {Map<string, Section>} */
    this.sections = new Map();
    /** @type {Section[]} */
    this.sectionList = [];
    /** @type {Fault[]} */
    this.faults = [];
    /** @type {string[]} */
    this.violations = [];
    /** @type {Record<string, number>} */
    this.acquireFailures = {};
    /**
     * Calls refused because their worker was shutting down (LockShuttingDownError): refusals,
     * not failures.
     * @type {import('./drain.mjs').Refusal[]}
     */
    this.refusals = [];
    /** Whether the arrival order is checked: fair mode's line, in the store it is measured on. */
    this.orderChecked = this.redis !== undefined && this.kind === 'mutex';
    /** Duplicate fencing tokens handed out (to two acquisitions). */
    this.duplicateTokens = 0;
    /**
     * Calls whose lock Redis granted but that failed before their section ran: the lock was
     * reported `lost`, or had `expired` when the answer came (with how long the answer took,
     * where the worker measured it).
     * @type {GrantedButLost[]}
     */
    this.grantedButLost = [];
    /** @type {((worker: WorkerHandle, message: ReadRequest) => void) | undefined} */
    this.interceptRead = undefined;
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    /** @type {LockServers | undefined} set up by {@link run} */
    this.servers = undefined;
    /**
     * The `leader` nemesis's election, which every worker then stands in (see leader.mjs).
     * @type {LeaderHistory | undefined}
     */
    this.leadership = this.faultPlan.includes('leader') ? new LeaderHistory() : undefined;
    /**
     * Every signal sent to a worker, on the shared clock: a paused or killed leader cannot
     * tell that its term ended.
     * @type {{ worker: number, signal: NodeJS.Signals, at: number }[]}
     */
    this.signals = [];
    /** What the workers answered to the `forge` nemesis's hand-offs and adoptions. */
    this.handOffs = new HandOffs();
    /** What the workers said of the `tick` nemesis's pauses and rounds. */
    this.ticks = new TickResults();
  }

  get redlock() {
    return this.masterCount > 1;
  }

  /** The ZooKeeper mode's standalone server (not on an ensemble). */
  get zookeeperServer() {
    if (!this.zookeeper || !('server' in this.zookeeper)) {
      throw new Error('SafetyChecker: no standalone ZooKeeper server');
    }
    return this.zookeeper.server;
  }

  /** The lock's servers and their probes; only while {@link run} runs. */
  get lockServers() {
    if (!this.servers) throw new Error('SafetyChecker: the lock servers are not set up');
    return this.servers;
  }

  /** Runs the whole thing and returns the analysis (it does not throw on violations). */
  async run() {
    if (!existsSync(BUILT_LIBRARY)) {
      throw new Error(
        `The safety checker's worker processes import the built library (${BUILT_LIBRARY}), ` +
          'which is missing: run `npm run build` first.',
      );
    }
    const startedAt = Date.now();
    try {
      if (this.postgres) {
        this.pgProbe = new PostgresProbe(this.postgres.server.url);
      } else if (this.zookeeper) {
        // On an ensemble, the leader: the workers are on followers, which `partition` cuts
        // off, and a cut-off follower's answers are stale.
        this.probe = await ZooKeeperProbe.connect(
          this.ensemble ? (await this.ensemble.leader()).address : this.zookeeperServer.address,
        );
      } else {
        this.servers = this.redis
          ? LockServers.single(this.redis)
          : await LockServers.redlock(this.masterCount);
      }
      await Promise.all(Array.from({ length: this.workerCount }, () => this.spawnWorker()));
      this.log(`${this.workerCount} workers up after ${Date.now() - startedAt} ms`);
      await this.nemesis();
      await sleep(this.tailMs);
    } catch (error) {
      this.violations.push(
        `checker aborted: ${error instanceof Error ? error.stack : String(error)}`,
      );
    } finally {
      try {
        await this.shutdown();
        await this.checkNoNodesLeft();
      } finally {
        // The RedLock masters go even if the shutdown failed: nobody else would stop them.
        await this.servers?.close();
        this.probe?.close();
        await this.pgProbe?.close();
      }
    }
    return analyze(this, Date.now() - startedAt);
  }

  // ---- workers -------------------------------------------------------------------------------

  /** Forks one worker and resolves once its Nest context is up. */
  async spawnWorker() {
    const id = this.nextWorkerId++;
    const member = await this.memberFor(id);
    const target =
      this.redis?.port ??
      member?.port ??
      this.postgres?.server.port ??
      (this.zookeeper ? this.zookeeperServer.port : undefined);
    const proxy = this.proxied && target ? await TcpProxy.start(target) : undefined;
    const child = fork(WORKER_PATH, [], {
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {
        ...process.env,
        // One URL, or the masters' URLs comma-separated for RedLock (empty otherwise, in case
        // the parent's environment had some).
        CHECKER_REDIS_URL:
          this.redlock || this.zookeeper || this.postgres
            ? ''
            : (proxy?.url ?? this.lockServers.urls[0]),
        CHECKER_POSTGRES:
          this.postgres && proxy ? `postgres://postgres@127.0.0.1:${proxy.port}/postgres` : '',
        CHECKER_POSTGRES_NAME: `checker-worker-${id}`,
        CHECKER_ZOOKEEPER: this.zookeeper && proxy ? `127.0.0.1:${proxy.port}` : '',
        CHECKER_ZOOKEEPER_ROOT: this.zookeeperRoot,
        CHECKER_REDIS_URLS: this.redlock ? this.lockServers.urls.join(',') : '',
        CHECKER_NODE_TIMEOUT: String(this.nodeTimeout),
        CHECKER_KEY: this.key,
        CHECKER_KEY_PREFIX: this.keyPrefix,
        CHECKER_TTL: String(this.ttl),
        CHECKER_WAIT_TIMEOUT: '5000',
        CHECKER_COMMAND_TIMEOUT: String(COMMAND_TIMEOUT_MS),
        CHECKER_KIND: this.kind === 'semaphore' ? `semaphore:${this.limit}` : this.kind,
        CHECKER_CALLERS: String(this.callers),
        CHECKER_LEADER: this.leadership ? '1' : '',
        CHECKER_CLIENT: this.client,
      },
    });
    const kill = child.kill.bind(child);
    child.kill = (/** @type {NodeJS.Signals} */ signal) => {
      this.signals.push({ worker: id, signal, at: sharedNow() });
      return kill(signal);
    };
    this.processesStarted++;
    const worker = new WorkerHandle(id, child, proxy, member);
    this.workers.set(id, worker);
    child.stderr?.on('data', (/** @type {Buffer} */ chunk) => {
      worker.stderr = (worker.stderr + chunk.toString()).slice(-4000);
    });
    child.on('message', (/** @type {WorkerMessage} */ message) => this.onMessage(worker, message));
    child.on('exit', (code, signal) => {
      worker.exited = true;
      worker.exitedAt = Date.now();
      worker.exitStatus = signal ?? `code ${code}`;
      this.workers.delete(id);
      if (proxy) this.proxiesStopping.push(proxy.stop());
      if (!worker.expectedExit) {
        this.violations.push(
          `worker ${id} exited unexpectedly (code ${code}, signal ${signal}): ` +
            worker.stderr.trim().slice(-1000),
        );
      }
      this.notify();
    });
    await this.waitFor(
      () => worker.ready || worker.exited,
      60_000,
      `worker ${id} did not boot within 60 s`,
    );
    if (!worker.ready) throw new Error(`worker ${id} died while booting: ${worker.stderr.trim()}`);
    return worker;
  }

  /**
   * On an ensemble, the follower that worker `id` reaches: the followers in turn. Only
   * followers, because a follower cut off from the leader is where a read misleads (see
   * `partition`); the leader, which keeps its quorum then, stays the leader.
   * @param {number} id
   */
  async memberFor(id) {
    if (!this.ensemble) return undefined;
    const leader = await this.ensemble.leader();
    const followers = this.ensemble.servers.filter((server) => server !== leader);
    return followers[id % followers.length];
  }

  /**
   * @param {WorkerHandle} worker
   * @param {WorkerMessage} message
   */
  onMessage(worker, message) {
    const seq = ++this.seq;
    const now = Date.now();
    const id = worker.id;
    if (
      this.leadership?.onMessage(id, message, seq) ||
      this.handOffs.onMessage(id, message) ||
      this.ticks.onMessage(worker, message)
    ) {
      this.notify();
      return;
    }
    switch (message?.type) {
      case 'ready':
        worker.ready = true;
        // The arrival-order check compares times taken in different workers on one clock.
        if (message.clock > sharedNow()) {
          this.violations.push(`worker ${id}'s clock is ahead of the checker's: not one clock`);
        }
        break;
      case 'draining':
        worker.drainingSeq = seq;
        break;
      case 'waiting':
        worker.waitingTtl = message.ttl;
        break;
      case 'acquired': {
        worker.waitingTtl = undefined;
        const key = `${id}:${message.token}`;
        // A lock handed off keeps its fencing token in its adopter's hands.
        if (!message.adopted && this.sectionList.some((s) => s.token === message.token)) {
          this.duplicateTokens++;
        }
        /** @type {Section} */
        const section = {
          worker: id,
          token: message.token,
          lockToken: message.lockToken,
          ttl: message.ttl,
          waitedMs: message.waitedMs,
          share: message.share,
          acquiredSeq: seq,
          acquiredAt: now,
          call: message.call,
          acquiredHr: sharedNow(),
          adopted: message.adopted,
        };
        this.sections.set(key, section);
        this.sectionList.push(section);
        break;
      }
      case 'read': {
        const intercept = this.interceptRead;
        if (intercept && !worker.expectedExit) {
          this.interceptRead = undefined;
          intercept(worker, message);
        } else {
          this.serveRead(worker, message);
        }
        break;
      }
      case 'write': {
        const section = this.section(id, message.token);
        const accepted = this.resource.write(id, message.token, message.value, seq, section?.share);
        if (section) {
          section.writeSeq = seq;
          section.writeAccepted = accepted;
          section.signalAbortedAtWrite = message.signalAbortedAtWrite;
        }
        this.reply(worker, message.requestId, { ok: accepted });
        break;
      }
      case 'lost': {
        const section = this.section(id, message.token);
        if (section && section.lostSeq === undefined) {
          section.lostSeq = seq;
          section.lostAt = now;
          section.lostReason = message.reason;
        }
        break;
      }
      case 'released': {
        const section = this.section(id, message.token);
        if (section) {
          section.releasedSeq = seq;
          section.releasedAt = now;
          section.outcome = message.outcome;
        }
        break;
      }
      case 'acquireFailed':
        worker.waitingTtl = undefined;
        if (message.error === 'LockShuttingDownError') {
          const waiter = message.waitedFromBeforeDrain;
          this.refusals.push({ worker: id, draining: message.draining, waiter });
          break;
        }
        this.acquireFailures[message.error] = (this.acquireFailures[message.error] ?? 0) + 1;
        if (message.grantedButLost) {
          this.grantedButLost.push({
            worker: id,
            how: message.grantedButLost,
            ttl: message.ttl,
            grantRttMs: message.grantRttMs,
            message: message.message,
          });
        }
        break;
      default:
        break;
    }
    this.notify();
  }

  /**
   * @param {number} worker
   * @param {number | undefined} token a `released` message's is undefined by its type (never
   *   in fact); it then matches no section
   */
  section(worker, token) {
    return this.sections.get(`${worker}:${token}`);
  }

  /**
   * Handles a read now: the fencing guard decides, the worker gets the value.
   * @param {WorkerHandle} worker
   * @param {ReadRequest} message
   */
  serveRead(worker, message) {
    this.reply(worker, message.requestId, this.readResource(worker, message));
  }

  /**
   * The resource's side of a read, without the reply, which a fault may hold back.
   * @param {WorkerHandle} worker
   * @param {ReadRequest} message
   */
  readResource(worker, message) {
    const seq = ++this.seq;
    const section = this.section(worker.id, message.token);
    const result = this.resource.read(worker.id, message.token, seq, section?.share);
    if (section) {
      section.readSeq = seq;
      section.readAccepted = result.ok;
    }
    this.notify();
    return result;
  }

  /**
   * @param {WorkerHandle} worker
   * @param {number} requestId
   * @param {Omit<ReadReply, 'type' | 'requestId'> | Omit<WriteReply, 'type' | 'requestId'>} fields
   */
  reply(worker, requestId, fields) {
    if (worker.exited || !worker.child.connected) return;
    worker.child.send({ type: 'reply', requestId, ...fields }, (error) => {
      if (error && !worker.expectedExit)
        this.violations.push(`reply to worker ${worker.id}: ${error}`);
    });
  }

  notify() {
    for (const listener of [...this.listeners]) listener();
  }

  /**
   * Resolves `true` once `condition()` holds (checked on every event and every 50 ms), or
   * `false` after `timeoutMs`, recording `problem` as a violation if given.
   * @param {() => boolean} condition
   * @param {number} timeoutMs
   * @param {string} [problem]
   */
  async waitFor(condition, timeoutMs, problem) {
    if (condition()) return true;
    /** @type {boolean} */
    const ok = await new Promise((resolve) => {
      /** @type {NodeJS.Timeout | undefined} */
      let poll;
      const done = (/** @type {boolean} */ result) => {
        this.listeners.delete(check);
        clearTimeout(timer);
        clearInterval(poll);
        resolve(result);
      };
      const check = () => {
        if (condition()) done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      poll = setInterval(check, 50);
      this.listeners.add(check);
    });
    if (!ok && problem) this.violations.push(problem);
    return ok;
  }

  /** Accepted writes so far. */
  acceptedWrites() {
    return this.resource.log.filter((e) => e.op === 'write' && e.accepted).length;
  }

  /**
   * Whether some write after `seq` was accepted.
   * @param {number} seq
   * @param {number} [aboveToken] and carried a token above this one
   */
  acceptedWriteSince(seq, aboveToken = 0) {
    const log = this.resource.log;
    for (let i = log.length - 1; i >= 0 && log[i].seq > seq; i--) {
      if (log[i].op === 'write' && log[i].accepted && log[i].token > aboveToken) return true;
    }
    return false;
  }

  // ---- the nemesis ---------------------------------------------------------------------------

  async nemesis() {
    const deadline = Date.now() + this.durationMs;
    let round = 0;
    do {
      for (const kind of this.faultPlan) {
        await sleep(this.gapMs * (0.5 + Math.random()));
        await this.inject(kind);
      }
      round++;
    } while (Date.now() < deadline);
    this.log(`nemesis done after ${round} round(s), ${this.faults.length} faults`);
  }

  /** @param {FaultKind} kind */
  async inject(kind) {
    if (kind === 'clock-back') {
      const fault = this.begin(kind, 0, 0);
      await this.clockBack(fault);
      await this.settle(fault);
      return;
    }
    if (kind === 'leader') {
      const fault = this.begin(kind, 0, 0);
      fault.losesLock = false;
      await endLeadership(this, fault);
      await this.settle(fault);
      return;
    }
    if (kind === 'tick') {
      const fault = this.begin(kind, 0, 0);
      await tickRounds(this, fault);
      await this.settle(fault);
      return;
    }
    if (isWaiterFault(kind)) {
      const fault = this.begin(kind, 0, 0);
      if (kind === 'lag') await this.lag(fault);
      else if (kind === 'kill-waiter') await this.killWaiter(fault);
      else if (kind === 'unmark') await this.unmark(fault);
      else if (kind === 'stale-turn') await this.staleTurn(fault);
      else await this.shortTtl(fault);
      await this.settle(fault);
      return;
    }
    // Aim at the worker that is inside the critical section: take over its next read.
    /** @type {{ worker: WorkerHandle, message: ReadRequest } | undefined} */
    let victim;
    this.interceptRead = (worker, message) => (victim = { worker, message });
    const armed = await this.waitFor(
      () => victim !== undefined,
      20_000,
      `no worker reached the critical section within 20 s (before a ${kind} fault)`,
    );
    this.interceptRead = undefined;
    if (!armed || !victim) return;
    const section = this.section(victim.worker.id, victim.message.token);
    if (section) section.fault = kind;
    const fault = this.begin(kind, victim.worker.id, victim.message.token);
    if (kind === 'kill') await this.kill(fault, victim.worker);
    else if (kind === 'drain') await drainHolder(this, fault, victim.worker, victim.message);
    else if (kind === 'stop') await this.stop(fault, victim.worker, victim.message);
    else if (kind === 'restart') await this.restartServer(fault, victim.worker, victim.message);
    else if (kind === 'expire') await this.expire(fault, victim.worker, victim.message);
    else if (kind === 'partition') await this.partition(fault, victim.worker, victim.message);
    else if (kind === 'terminate') await this.terminate(fault, victim.worker, victim.message);
    else if (kind === 'forge') await forgeHandOff(this, fault, victim.worker, victim.message);
    else {
      const count =
        kind === 'majority' ? this.lockServers.quorum : this.masterCount - this.lockServers.quorum;
      await this.restartMasters(fault, victim.worker, victim.message, count);
    }
    await this.settle(fault);
  }

  /**
   * Records a fault as it starts.
   * @param {FaultKind} kind
   * @param {number} worker
   * @param {number} token
   */
  begin(kind, worker, token) {
    /** @type {Fault} */
    const fault = {
      kind,
      worker,
      token,
      startSeq: ++this.seq,
      startedAt: Date.now(),
      startedHr: sharedNow(),
      // Only a fault that can take the lock from its holder explains an overlap: not one that
      // the lock should survive (a drained holder keeps it to the end of its work, a handle
      // passes it on whole, and a master lost is a minority).
      losesLock:
        !['minority', 'drain', 'clock-back', 'forge', 'tick'].includes(kind) &&
        !isWaiterFault(kind),
      keepsOrder: kind === 'unmark' || kind === 'clock-back',
      problems: [],
      facts: {},
    };
    this.faults.push(fault);
    return fault;
  }

  /**
   * Ends a fault: work must go on after it, and what went wrong counts as violations.
   * @param {Fault} fault
   */
  async settle(fault) {
    const kind = fault.kind;
    fault.endSeq = ++this.seq;
    fault.endedHr = sharedNow();
    // Nothing hangs: work must go on after every fault.
    const endSeq = fault.endSeq;
    const progressed = await this.waitFor(() => this.acceptedWriteSince(endSeq), 20_000);
    if (!progressed) fault.problems.push('no critical section was accepted within 20 s after it');
    this.violations.push(
      ...fault.problems.map((p) => `${kind} fault #${this.faults.length}: ${p}`),
    );
    this.log(
      `${kind}${fault.worker ? ` of worker ${fault.worker}` : ''}: ` +
        (fault.problems.length ? fault.problems.join('; ') : 'ok') +
        (isWaiterFault(kind) || kind === 'forge' || kind === 'tick'
          ? ` ${JSON.stringify(fault.facts)}`
          : ''),
    );
  }

  // ---- the faults aimed at waiters -----------------------------------------------------------

  /** Workers up and running, neither stopped nor on their way out. */
  liveWorkers() {
    return [...this.workers.values()].filter(
      (worker) => worker.ready && !worker.exited && !worker.expectedExit && !worker.stopped,
    );
  }

  /** The worker inside the critical section as far as the checker knows, or 0. */
  holder() {
    const last = this.sectionList[this.sectionList.length - 1];
    return last && last.releasedSeq === undefined ? last.worker : 0;
  }

  /**
   * Sets the TTL a worker asks for in its next calls and how long its sections work (both back
   * to the defaults when not given).
   * @param {WorkerHandle} worker
   * @param {WorkerConfig} config
   */
  configure(worker, config) {
    if (worker.child.connected) worker.child.send({ type: 'config', ...config }, () => undefined);
  }

  /**
   * How long the key stayed unused before each acquisition after `fromSeq` up to `toSeq`: from
   * the release of the section before it (as its worker reported) to the acquisition.
   * @param {number} fromSeq
   * @param {number} toSeq
   */
  idleGaps(fromSeq, toSeq) {
    const gaps = [];
    const list = this.sectionList;
    for (let i = 1; i < list.length; i++) {
      const [before, section] = [list[i - 1], list[i]];
      if (section.acquiredSeq <= fromSeq || section.acquiredSeq > toSeq) continue;
      if (before.releasedAt !== undefined) {
        gaps.push(Math.max(0, section.acquiredAt - before.releasedAt));
      }
    }
    return gaps;
  }

  /**
   * Polls an asynchronous condition every few ms; resolves whether it held within `timeoutMs`.
   * @param {() => Promise<boolean>} condition
   * @param {number} timeoutMs
   */
  async pollUntil(condition, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await condition()) return true;
      await sleep(5);
    }
    return false;
  }

  /**
   * `lag`: the pub/sub connections of half the waiters (drawn among the workers not holding the
   * lock) deliver everything a few handover leases late, while now and then one of their
   * command connections stalls for a moment (one stall in three for longer than the
   * commandTimeout); then traffic flows again, and the fault ends once the last late notice has
   * landed.
   * @param {Fault} fault
   */
  async lag(fault) {
    const holder = this.holder();
    const waiters = shuffled(this.liveWorkers().filter((worker) => worker.id !== holder));
    const lagged = waiters.slice(0, Math.max(1, Math.ceil(waiters.length / 2)));
    const proxies = lagged.flatMap((worker) => (worker.proxy ? [worker.proxy] : []));
    const delayMs = randomInt(...this.lagMs);
    const windowMs = 2 * delayMs;
    const delayedBefore = proxies.reduce((sum, proxy) => sum + proxy.delayedChunks, 0);
    for (const proxy of proxies) proxy.delay(delayMs, (c) => proxy.subscribes(c));
    const endAt = Date.now() + windowMs;
    let stalls = 0;
    let longStalls = 0;
    while (Date.now() < endAt && proxies.length > 0) {
      const proxy = proxies[randomInt(0, proxies.length - 1)];
      const long = stalls % 3 === 2;
      proxy.stall((c) => !proxy.subscribes(c));
      await sleep(
        long ? randomInt(COMMAND_TIMEOUT_MS + 50, COMMAND_TIMEOUT_MS + 500) : randomInt(10, 100),
      );
      proxy.resume();
      stalls++;
      if (long) longStalls++;
      await sleep(randomInt(20, 200));
    }
    for (const proxy of proxies) proxy.delay(0);
    const restoredSeq = this.seq;
    await sleep(delayMs + 100);
    const during = this.sectionList.filter(
      (s) => s.acquiredSeq > fault.startSeq && s.acquiredSeq <= restoredSeq,
    );
    const laggedIds = new Set(lagged.map((worker) => worker.id));
    Object.assign(fault.facts, {
      lagged: lagged.length,
      delayMs,
      windowMs,
      stalls,
      longStalls,
      lateChunks: proxies.reduce((sum, proxy) => sum + proxy.delayedChunks, 0) - delayedBefore,
      sections: during.length,
      laggedSections: during.filter((s) => laggedIds.has(s.worker)).length,
      maxGapMs: Math.max(0, ...this.idleGaps(fault.startSeq, this.seq)),
    });
  }

  /**
   * `kill-waiter`: gives one or two waiters a TTL far longer than the handover lease, SIGKILLs
   * each once it is queued in Redis behind at least two others (so that it is not about to be
   * granted the lock), and forks replacements. Then measures, until their places in the queue
   * are gone and the lock was taken again, the longest time the key stayed unused while the
   * others waited.
   * @param {Fault} fault
   */
  async killWaiter(fault) {
    const holder = this.holder();
    const victims = shuffled(this.liveWorkers().filter((worker) => worker.id !== holder)).slice(
      0,
      randomInt(1, 2),
    );
    // Each victim's own TTL tells its place in the queue in Redis.
    const ttlOf = (/** @type {number} */ i) => VICTIM_TTL + i;
    victims.forEach((victim, i) => this.configure(victim, { ttl: ttlOf(i) }));
    const lockKey = this.keyPrefix + this.key;
    const deadline = Date.now() + 10_000;
    /** @type {number[]} */
    const places = [];
    /** @type {number | undefined} */
    let killSeq;
    for (const [i, victim] of victims.entries()) {
      const queued = await this.pollUntil(async () => {
        if (victim.waitingTtl !== ttlOf(i)) return false;
        places[i] = (await this.lockServers.queuedTtls(lockKey, this.kind !== 'mutex')).indexOf(
          ttlOf(i),
        );
        return places[i] >= 2;
      }, deadline - Date.now());
      if (!queued) {
        this.configure(victim, {});
        continue;
      }
      victim.expectedExit = true;
      victim.child.kill('SIGKILL');
      killSeq ??= ++this.seq;
    }
    const killed = victims.filter((victim) => victim.expectedExit);
    if (killed.length < victims.length) {
      fault.problems.push(
        `${victims.length - killed.length} chosen waiter(s) not queued behind two others within 10 s`,
      );
    }
    if (killSeq === undefined) return;
    const replacements = Promise.all(
      killed.map(() =>
        this.spawnWorker().catch((/** @type {unknown} */ error) => {
          fault.problems.push(`replacement worker failed: ${String(error)}`);
        }),
      ),
    );
    const passed = await this.pollUntil(
      async () =>
        (await this.lockServers.queuedTtls(lockKey, this.kind !== 'mutex')).every(
          (ttl) => ttl < VICTIM_TTL,
        ),
      20_000,
    );
    const passedSeq = ++this.seq;
    const next = () => this.sectionList.find((s) => s.acquiredSeq > passedSeq);
    const resumed = passed && (await this.waitFor(() => next() !== undefined, 20_000));
    if (!resumed) {
      fault.problems.push('the lock was not taken within 20 s after the killed waiters left');
    }
    const gapMs = Math.max(0, ...this.idleGaps(killSeq, next()?.acquiredSeq ?? this.seq));
    Object.assign(fault.facts, { victims: killed.length, places, gapMs });
    if (gapMs >= DEAD_WAITER_BOUND_MS) {
      fault.problems.push(
        `the key stayed unused for ${gapMs} ms while others waited after ${killed.length} ` +
          `queued waiter(s) with a ${VICTIM_TTL} ms TTL died (bound ${DEAD_WAITER_BOUND_MS} ms)`,
      );
    }
    await replacements;
  }

  /**
   * `clock-back`: moves the fencing counter ahead of the server clock, as a clock stepped back
   * that far would leave it, and lasts until the clock has caught up (so that a later restart,
   * which empties the counter, leaves tokens to a clock that is ahead of them again). Tokens
   * must keep growing meanwhile, from the counter (the order check runs over the whole
   * history); the fault checks that sections were granted while the counter led, and that
   * every section after the move got a token above where it put the counter, unless the token
   * was issued before the move (at most where the counter or the clock stood then: a grant
   * whose notice or reply was still on its way).
   * @param {Fault} fault
   */
  async clockBack(fault) {
    const movedAt = Date.now();
    const movedTo = await this.lockServers.counterAhead(this.keyPrefix, CLOCK_BACK_MS * 1_000);
    const movedFrom = movedTo - CLOCK_BACK_MS * 1_000;
    const startSeq = this.seq;
    await sleep(CLOCK_BACK_MS + 200);
    const after = this.sectionList.filter((s) => s.acquiredSeq > startSeq);
    const whileAhead = after.filter((s) => s.acquiredAt < movedAt + CLOCK_BACK_MS - 100).length;
    const atOrBelow = after.filter((s) => s.token > movedFrom && s.token <= movedTo).length;
    Object.assign(fault.facts, { movedTo, sections: after.length, whileAhead });
    if (atOrBelow > 0) {
      fault.problems.push(
        `${atOrBelow} of ${after.length} sections after the counter moved ahead got a token ` +
          `at or below it`,
      );
    }
  }

  /**
   * `unmark`: for a few seconds, takes the queue mark off the mutex's lock value as soon as a
   * waiter puts it there, so that releases leave the queue to the waiters' own attempts (see
   * QUEUE_LUA). The lock must still go in arrival order (the order check counts overtakings
   * during this fault as violations), the key must not stay unused for long while others wait,
   * and the path under attack must have been taken: a lock seen free with waiters queued.
   * @param {Fault} fault
   */
  async unmark(fault) {
    if (this.kind !== 'mutex' || this.masterCount !== 1) {
      fault.problems.push('unmark needs a mutex on one Redis');
      return;
    }
    const lockKey = this.keyPrefix + this.key;
    const endAt = Date.now() + UNMARK_WINDOW_MS;
    let stripped = 0;
    let freeWithQueue = 0;
    while (Date.now() < endAt) {
      const step = await this.lockServers.stripQueueMark(lockKey);
      if (step === 1) stripped++;
      else if (step === 2) freeWithQueue++;
      await sleep(1);
    }
    const restoredSeq = this.seq;
    const during = this.sectionList.filter(
      (s) => s.acquiredSeq > fault.startSeq && s.acquiredSeq <= restoredSeq,
    );
    const maxGapMs = Math.max(0, ...this.idleGaps(fault.startSeq, restoredSeq));
    Object.assign(fault.facts, { stripped, freeWithQueue, sections: during.length, maxGapMs });
    if (stripped === 0) fault.problems.push('no queue mark was there to take off');
    if (maxGapMs >= UNMARKED_GAP_BOUND_MS) {
      fault.problems.push(
        `the key stayed unused for ${maxGapMs} ms while the queue mark was lost ` +
          `(bound ${UNMARKED_GAP_BOUND_MS} ms)`,
      );
    }
  }

  /**
   * `stale-turn`: for a few seconds, announces to the waiters grants of the lock that came
   * before their last refusal (see {@link LockServers.announceStaleTurns}), as a grant notice
   * that arrives late, or is delivered twice, reads. A waiter may hold on a notice only when it
   * can date the grant after its last refusal: one that holds on these overlaps the holder,
   * which the analysis counts as a violation over the whole run. The fault checks that notices
   * went out while sections went on.
   * @param {Fault} fault
   */
  async staleTurn(fault) {
    if (this.kind !== 'mutex' || this.masterCount !== 1) {
      fault.problems.push('stale-turn needs a mutex on one Redis');
      return;
    }
    const lockKey = this.keyPrefix + this.key;
    const endAt = Date.now() + STALE_TURN_WINDOW_MS;
    let notices = 0;
    while (Date.now() < endAt) {
      notices += await this.lockServers.announceStaleTurns(lockKey);
      await sleep(2);
    }
    const sections = this.sectionList.filter((s) => s.acquiredSeq > fault.startSeq).length;
    Object.assign(fault.facts, { notices, sections });
    if (notices === 0) fault.problems.push('no waiter was queued behind a holder to announce to');
  }

  /**
   * `short-ttl`: for a few seconds, half the workers ask for a TTL of 50–100 ms and the others'
   * sections work 20–40 ms, so that the short-TTL callers wait longer than their TTL for a
   * lock handed over to them. What must not happen (a granted lock reported lost before its
   * section, an overlap) is checked over the whole run; this records what was exercised.
   * @param {Fault} fault
   */
  async shortTtl(fault) {
    const workers = shuffled(this.liveWorkers());
    const short = workers.slice(0, Math.ceil(workers.length / 2));
    /** @type {Map<number, number>} */
    const ttls = new Map(short.map((worker) => [worker.id, randomInt(50, 100)]));
    for (const worker of workers) {
      const ttl = ttls.get(worker.id);
      this.configure(worker, ttl === undefined ? { work: [20, 40] } : { ttl });
    }
    await sleep(randomInt(2_000, 3_000));
    for (const worker of workers) this.configure(worker, {});
    const sections = this.sectionList.filter(
      (s) => s.acquiredSeq > fault.startSeq && ttls.has(s.worker) && s.ttl < this.ttl,
    );
    Object.assign(fault.facts, {
      shortWorkers: short.length,
      sections: sections.length,
      waitedPastTtl: sections.filter((s) => s.waitedMs > s.ttl).length,
      lostInSection: sections.filter((s) => s.lostSeq !== undefined).length,
    });
  }

  /**
   * SIGKILL a holder. Its lock must outlive it: nobody else may acquire before the key's
   * expiry as Redis reported it right after the kill (under RedLock, before a majority of the
   * masters has let the holder's copy expire), or, on ZooKeeper, while its node is still seen.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   */
  async kill(fault, worker) {
    const lockToken = this.section(worker.id, fault.token)?.lockToken;
    worker.expectedExit = true;
    worker.child.kill('SIGKILL');
    const killSeq = this.seq;
    // Under a semaphore, or a read-write lock whose victim read, others may hold the key beside
    // the victim: its expiry bounds nobody's acquisition (the analysis counts who was inside).
    const exclusive =
      this.kind === 'mutex' || this.section(worker.id, fault.token)?.share === 'write';
    const bound = this.postgres
      ? await this.rowExpiry(fault, lockToken, exclusive)
      : this.zookeeper
        ? await this.nodeLastSeen(fault, lockToken, exclusive)
        : // A read-write lock's key holds its kind's marker, not a writer's token.
          await this.keyExpiry(fault, this.kind === 'mutex' ? lockToken : undefined, exclusive);
    const replacement = this.spawnWorker().catch((/** @type {unknown} */ error) => {
      fault.problems.push(`replacement worker failed: ${String(error)}`);
    });
    const next = () =>
      this.sectionList.find((s) => s.acquiredSeq > killSeq && s.worker !== worker.id);
    const taken = await this.waitFor(() => next() !== undefined, 20_000);
    const successor = next();
    if (!taken || !successor) {
      fault.problems.push('nobody acquired the lock within 20 s after its holder was killed');
    } else {
      fault.facts.takeoverAfterKillMs = successor.acquiredAt - fault.startedAt;
      if (bound && successor.acquiredAt < bound.notBefore) {
        fault.problems.push(
          `worker ${successor.worker} acquired ${bound.notBefore - successor.acquiredAt} ms ` +
            `before ${bound.what}`,
        );
      }
    }
    await replacement;
  }

  /**
   * Redis: when the killed holder's key can expire at the earliest, from its PTTL read right
   * after the kill (RedLock: the quorum-th smallest of the masters' PTTLs). No copy left (or
   * none reached), or a victim that did not hold the key alone, leaves no bound; the check then
   * only asks for a takeover.
   * @param {Fault} fault
   * @param {string | undefined} lockToken
   * @param {boolean} exclusive
   * @returns {Promise<{ notBefore: number, what: string } | undefined>}
   */
  async keyExpiry(fault, lockToken, exclusive) {
    const probeSentAt = Date.now();
    const copies = await this.lockServers.probe(this.keyPrefix + this.key);
    const freeAfter = this.lockServers.majorityFreeAfter(copies, lockToken);
    fault.facts.pttlsAfterKill = copies.map((copy) => copy.pttl);
    if (freeAfter <= 0 || !exclusive) return undefined;
    // Redis computed each PTTL at or after probeSentAt (same machine, same clock).
    const expiresNoEarlierThan = probeSentAt + freeAfter;
    fault.facts.freeBoundMs = expiresNoEarlierThan - fault.startedAt;
    return {
      // 2 ms of slack for Redis's and Date.now()'s millisecond rounding.
      notBefore: expiresNoEarlierThan - 2,
      what:
        "the killed holder's key could have expired" +
        (this.redlock ? ' on a majority of the masters' : ''),
    };
  }

  /**
   * ZooKeeper: the killed holder's node outlives it until its session expires. Polls the tree
   * from right after the kill until the node is gone: nobody may acquire before a probe that
   * still found it was sent. A victim that did not hold the key alone leaves no bound, as in
   * {@link keyExpiry}.
   * @param {Fault} fault
   * @param {string | undefined} lockToken
   * @param {boolean} exclusive
   * @returns {Promise<{ notBefore: number, what: string } | undefined>}
   */
  async nodeLastSeen(fault, lockToken, exclusive) {
    const probe = this.probe;
    if (!probe || !lockToken || !exclusive) return undefined;
    let lastSeenAt = 0;
    await this.pollUntil(async () => {
      const sentAt = Date.now();
      if (!(await probe.hasNodeOf(this.zookeeperRoot, lockToken))) return true;
      lastSeenAt = sentAt;
      return false;
    }, 20_000);
    fault.facts.nodeGoneAfterKillMs = lastSeenAt ? lastSeenAt - fault.startedAt : 0;
    return { notBefore: lastSeenAt, what: "the killed holder's node was last seen" };
  }

  /**
   * PostgreSQL: the killed holder's row lives until its expiry on the database's clock, read
   * right after the kill (the database computes what is left at or after the probe was sent). A
   * victim that did not hold the key alone leaves no bound, as in {@link keyExpiry}.
   * @param {Fault} fault
   * @param {string | undefined} lockToken
   * @param {boolean} exclusive
   * @returns {Promise<{ notBefore: number, what: string } | undefined>}
   */
  async rowExpiry(fault, lockToken, exclusive) {
    if (!this.pgProbe || !lockToken || !exclusive) return undefined;
    const probeSentAt = Date.now();
    const left = await this.pgProbe.msLeft(this.keyPrefix + this.key, lockToken);
    fault.facts.msLeftAfterKill = Math.round(left);
    if (left <= 0) return undefined;
    fault.facts.freeBoundMs = probeSentAt + left - fault.startedAt;
    // 2 ms of slack for the rounding of Date.now().
    return { notBefore: probeSentAt + left - 2, what: "the killed holder's row could expire" };
  }

  /**
   * PostgreSQL: the server ends every connection of the holder (its pool's and its listener's),
   * again every third of a TTL for three TTLs, while the holder's read is held. The lease is a
   * row, not a session: the holder renews on new connections and keeps its lock (its signal
   * does not abort, its write goes in). Should a renewal not get through within its validity
   * on a loaded machine, the holder must have been told, as any holder (the analysis holds it
   * to that); the fault records which happened.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   */
  async terminate(fault, worker, read) {
    const section = this.section(worker.id, fault.token);
    let ended = 0;
    for (const end = Date.now() + 3 * this.ttl; Date.now() < end; await sleep(this.ttl / 3)) {
      ended += (await this.pgProbe?.terminate(`checker-worker-${worker.id}`)) ?? 0;
    }
    fault.facts.connectionsEnded = ended;
    fault.facts.kept = section?.lostSeq === undefined;
    this.serveRead(worker, read);
    const settled = await this.waitFor(() => section?.releasedSeq !== undefined, 15_000);
    if (!section || !settled) {
      fault.problems.push('the holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.outcome = section.outcome;
    const expected = section.lostSeq === undefined ? 'ok' : 'LockLostError';
    if (section.outcome !== expected) {
      fault.problems.push(`the holder's using() ended with ${section.outcome}, not ${expected}`);
    }
  }

  /**
   * ZooKeeper: stall the holder's connection until its session has expired and a newer holder
   * wrote (see {@link cutOff}).
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   */
  async expire(fault, worker, read) {
    const proxy = worker.proxy;
    await this.cutOff(
      fault,
      worker,
      read,
      proxy && {
        cut: () => proxy.stall(),
        heal: async () => proxy.resume(),
      },
    );
  }

  /**
   * ZooKeeper ensemble: cut the holder's follower off from the other members until the leader
   * expired the holder's session and a newer holder wrote (see {@link cutOff}), then heal it and
   * wait until it serves again. Records whether the follower still served its clients when the
   * newer holder acquired: the window in which it answers reads from a tree the leader has moved
   * past.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   */
  async partition(fault, worker, read) {
    const [ensemble, member] = [this.ensemble, worker.member];
    const section = this.section(worker.id, fault.token);
    /** @type {Promise<void> | undefined} */
    let stillServing;
    const next = () => (section ? this.nextExcluded(section) : undefined);
    await this.cutOff(
      fault,
      worker,
      read,
      ensemble &&
        member && {
          cut: () => {
            ensemble.isolate(member);
            stillServing = this.waitFor(() => next() !== undefined, 20_000)
              .then(() => member.srvr())
              .then((srvr) => {
                fault.facts.stillServingWhenTaken = /Mode: follower/.test(srvr);
              });
          },
          heal: async () => {
            await stillServing;
            ensemble.heal();
            await member.serving();
          },
        },
    );
  }

  /**
   * The first section of another worker acquired after `victim`'s that its hold, had it lasted,
   * would have kept out: any under a mutex; under a read-write lock, one where either is a
   * writer; under a semaphore, one that reached the resource while `limit` others (the victim
   * among them) were at it.
   * @param {Section} victim
   */
  nextExcluded(victim) {
    return this.sectionList.find((s) => {
      if (s.acquiredSeq <= victim.acquiredSeq || s.worker === victim.worker) return false;
      if (this.kind === 'rw') return victim.share === 'write' || s.share === 'write';
      if (this.kind === 'mutex') return true;
      // Who was inside is read from the resource's intervals, as in the analysis (a release is
      // reported after the next holder may have come in). A killed holder's interval never
      // ends, and one told of its loss holds nothing: neither counts, but the victim, whose
      // hold is in question.
      const at = s.readSeq;
      if (at === undefined) return false;
      const inside = this.sectionList.filter(
        (o) =>
          o !== s &&
          o.readSeq !== undefined &&
          o.readSeq < at &&
          (o.writeSeq ?? o.releasedSeq ?? Infinity) > at &&
          (o === victim || (o.fault !== 'kill' && (o.lostSeq === undefined || o.lostSeq > at))),
      );
      return inside.length >= this.limit;
    });
  }

  /**
   * ZooKeeper: cut the holder off (`cut`) until its session has expired and a newer holder
   * wrote, then `heal`. Its read goes through first and its reply is held back, so that its
   * write comes stale. It must be told within its validity, and before the next holder
   * acquired.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   * @param {{ cut(): void, heal(): Promise<void> } | undefined} link
   */
  async cutOff(fault, worker, read, link) {
    const section = this.section(worker.id, fault.token);
    if (!section || !link) {
      fault.problems.push('the holder has no recorded section or nothing to cut it off by');
      this.serveRead(worker, read);
      return;
    }
    const readResult = this.readResource(worker, read);
    const cutAt = Date.now();
    link.cut();
    try {
      await this.loseThrough(fault, worker, section, read, readResult, cutAt);
    } finally {
      await link.heal();
    }
    if (fault.facts.toldBeforeNext === false) {
      fault.problems.push('the next holder acquired before the cut-off holder was told');
    }
  }

  /**
   * ZooKeeper: a violation for every node left under the run's root, which is then deleted;
   * PostgreSQL: for every row left under the run's prefix.
   */
  async checkNoNodesLeft() {
    if (this.pgProbe) {
      const rows = await this.pgProbe.takeLeft(this.keyPrefix);
      if (rows.length > 0) this.violations.push(`rows left after the run: ${rows.join(', ')}`);
    }
    if (!this.probe) return;
    const left = await this.probe.below(this.zookeeperRoot);
    if (left.length > 0) this.violations.push(`nodes left after the run: ${left.join(', ')}`);
    await this.probe.remove(this.zookeeperRoot);
  }

  /**
   * SIGSTOP a holder for longer than its TTL (until another holder has written), answer its
   * read while it sleeps, then SIGCONT and watch what it does.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   */
  async stop(fault, worker, read) {
    worker.child.kill('SIGSTOP');
    worker.stopped = true;
    // The read is handled while the holder is stopped but still holds the lock; the reply
    // waits in the pipe.
    this.serveRead(worker, read);
    const stoppedAt = Date.now();
    const tookOver = await this.waitFor(
      () => Date.now() - stoppedAt >= 2 * this.ttl && this.acceptedWriteSince(0, fault.token),
      20_000,
    );
    if (!tookOver) {
      fault.problems.push('no other worker took over within 20 s while the holder was stopped');
    }
    fault.facts.stoppedMs = Date.now() - stoppedAt;
    worker.child.kill('SIGCONT');
    worker.stopped = false;
    const section = this.section(worker.id, fault.token);
    const settled = await this.waitFor(() => section?.releasedSeq !== undefined, 15_000);
    if (!section || !settled) {
      fault.problems.push('the woken holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.signalAbortedAtWrite = section.signalAbortedAtWrite;
    fault.facts.outcome = section.outcome;
    if (section.lostSeq === undefined)
      fault.problems.push("the woken holder's signal never aborted");
    // No fencing token tells a stale permit from a current one (see FencedCounter).
    if (section.writeAccepted && this.kind !== 'semaphore') {
      fault.problems.push("the woken holder's stale write was accepted");
    }
    if (section.outcome !== 'LockLostError') {
      fault.problems.push(
        `the woken holder's using() ended with ${section.outcome}, not LockLostError`,
      );
    }
  }

  /**
   * Restart the lock's redis-server (kill -9, start again empty on the same port) or ZooKeeper
   * server (kill -9, start again with its data) while a holder is inside; it must be told its
   * lock is lost before it goes on.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   */
  async restartServer(fault, worker, read) {
    const before = Date.now();
    await (
      this.postgres?.server ?? (this.zookeeper ? this.zookeeperServer : this.lockServers.servers[0])
    ).restart();
    fault.facts.restartMs = Date.now() - before;
    const section = this.section(worker.id, fault.token);
    const told = await this.waitFor(() => section?.lostSeq !== undefined, 4 * this.ttl + 5_000);
    // ZooKeeper restarts with its data: a session, and the holder's node, outlive a restart
    // shorter than the session timeout, and a renewal answered within the lock's validity
    // rightly keeps the lock. Not told is then no fault, as long as the node is still there
    // (a second holder would show as an overlap, and its write would be refused).
    // PostgreSQL restarts with its data too: the row outlives the restart.
    const kept =
      !told &&
      section?.lockToken !== undefined &&
      (this.pgProbe
        ? await this.pgProbe.holds(section.lockToken).catch(() => false)
        : this.probe !== undefined &&
          (await this.probe.hasNodeOf(this.zookeeperRoot, section.lockToken).catch(() => false)));
    fault.facts.keptAcrossRestart = kept;
    if (!told && !kept) {
      fault.problems.push("the holder's signal was not aborted after the server restarted");
    }
    fault.facts.lostReason = section?.lostReason;
    this.serveRead(worker, read);
    const settled = await this.waitFor(() => section?.releasedSeq !== undefined, 15_000);
    if (!section || !settled) {
      fault.problems.push('the holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.outcome = section.outcome;
    const expected = kept ? 'ok' : 'LockLostError';
    if (section.outcome !== expected) {
      fault.problems.push(`the holder's using() ended with ${section.outcome}, not ${expected}`);
    }
    // A reader's section ends with a leave, which the resource never counts as a write: what
    // a reader that kept its lock must get through is its fenced read.
    const reader = section.share === 'read';
    if (kept && !(reader ? section.readAccepted : section.writeAccepted)) {
      fault.problems.push(
        `the holder kept its lock across the restart, but its ${reader ? 'read' : 'write'} was refused`,
      );
    }
  }

  /**
   * RedLock: kill -9 `count` masters drawn at random while a holder is inside, and start them
   * again empty. Whether the lock survives is decided by where it is: the masters that held the
   * holder's token just before, less those restarted, must still be a majority.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {ReadRequest} read
   * @param {number} count
   */
  async restartMasters(fault, worker, read, count) {
    const servers = this.lockServers;
    const section = this.section(worker.id, fault.token);
    if (!section) {
      fault.problems.push('the holder has no recorded section');
      this.serveRead(worker, read);
      return;
    }
    const copies = await servers.probe(this.keyPrefix + this.key);
    const holding = copies.flatMap((copy, i) => (copy.holder === section.lockToken ? [i] : []));
    const restarted = servers.pick(count);
    const left = holding.filter((i) => !restarted.includes(i)).length;
    fault.losesLock = left < servers.quorum;
    Object.assign(fault.facts, { holdingBefore: holding.length, holdingAfter: left, restarted });
    // A lock about to be lost: its holder's read goes through now, while it still holds the
    // lock, and the reply is held back (see loseThrough), so that its write comes stale.
    const readResult = fault.losesLock ? this.readResource(worker, read) : undefined;
    const restart = await servers.restart(restarted);
    fault.facts.restartMs = restart.tookMs;
    if (readResult) {
      await this.loseThrough(fault, worker, section, read, readResult, restart.deadAt);
    } else {
      await this.keepThrough(fault, worker, section, read, left);
    }
  }

  /**
   * The lock is still on a majority: it must stay its holder's. The holder is kept inside for
   * 3 TTLs (its read held back), so that several renewals have to succeed on the survivors;
   * nobody else may acquire meanwhile; then its read and write must go in as usual.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {Section} section
   * @param {ReadRequest} read
   * @param {number} left masters that still hold the lock
   */
  async keepThrough(fault, worker, section, read, left) {
    // Any acquisition after the holder's and before its write happened while it held the lock:
    // the holder releases only after its write was answered, so a successor's acquisition
    // reaches the checker after that write. (Its read and write cannot show such an intruder:
    // the intruder would be done before the holder's read is even served.)
    const from = this.sectionList.indexOf(section) + 1;
    const intruder = () =>
      this.sectionList
        .slice(from)
        .find(
          (s) =>
            s.worker !== worker.id &&
            s.acquiredSeq < (section.writeSeq ?? section.releasedSeq ?? Infinity),
        );
    const heldAt = Date.now();
    await this.waitFor(
      () => section.lostSeq !== undefined || intruder() !== undefined,
      3 * this.ttl,
    );
    fault.facts.heldMs = Date.now() - heldAt;
    this.serveRead(worker, read);
    const settled = await this.waitFor(() => section.releasedSeq !== undefined, 15_000);
    const other = intruder();
    // A holder whose renewals could not be decided within its validity (its process starved of
    // CPU, as on an overloaded machine) gives the lock up and is told: no lock can keep a holder
    // that cannot renew, so that is counted apart, as long as nobody got in before it was told.
    // (A renewal answered after its validity ran out says so, whatever the answer.)
    const starved =
      section.lostSeq !== undefined &&
      /^(renewals did not reach the store|its validity ran out)/.test(section.lostReason ?? '') &&
      (!other || other.acquiredSeq > section.lostSeq);
    if (starved) {
      fault.facts.lostToSlowRenewals = true;
      return;
    }
    if (other) {
      fault.problems.push(
        `worker ${other.worker} (token ${other.token}) acquired while ${left} of ` +
          `${this.masterCount} masters still held the lock of worker ${worker.id}`,
      );
    }
    if (section.lostSeq !== undefined) {
      fault.problems.push(
        `the holder's signal aborted (${section.lostReason}) though ${left} of ` +
          `${this.masterCount} masters still held its lock`,
      );
    }
    if (!settled) {
      fault.problems.push('the holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.outcome = section.outcome;
    if (!section.writeAccepted) fault.problems.push("the holder's write was refused");
    if (section.outcome !== 'ok') {
      fault.problems.push(`the holder's using() ended with ${section.outcome}, not ok`);
    }
    // Kept: told nothing, nobody else in, and its write went in.
    fault.facts.kept = fault.problems.length === 0;
  }

  /**
   * The lock is gone from a majority: the holder must be told, at the latest when its
   * validity runs out (a TTL after the restarted masters died: no renewal confirmed by a
   * majority can have been sent later), and its stale write must be refused. Its read went
   * through before the restart; the reply waits until it was told and a newer holder wrote.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {Section} section
   * @param {ReadRequest} read
   * @param {{ ok: boolean, value: number }} readResult
   * @param {number} deadAt when the restarted masters were all dead
   */
  async loseThrough(fault, worker, section, read, readResult, deadAt) {
    const newerWrote = () => this.acceptedWriteSince(fault.startSeq, fault.token);
    await this.waitFor(() => section.lostSeq !== undefined && newerWrote(), 20_000);
    if (section.lostAt === undefined) {
      fault.problems.push("the holder's signal was not aborted within 20 s of losing its lock");
    } else {
      const toldMs = section.lostAt - deadAt;
      fault.facts.toldMs = toldMs;
      fault.facts.lostReason = section.lostReason;
      if (toldMs > this.ttl + TOLD_SLACK_MS) {
        fault.problems.push(
          `the holder was told ${toldMs} ms after its lock was lost, past its validity ` +
            `(ttl ${this.ttl} ms + ${TOLD_SLACK_MS} ms slack)`,
        );
      }
    }
    if (!newerWrote()) fault.problems.push('no newer holder wrote within 20 s');
    // Whether the holder heard of its loss before anybody else had the lock, or only after:
    // the latter is RedLock's known window (a majority forgot), closed by the fencing token.
    const next = this.nextExcluded(section);
    if (next) {
      fault.facts.nextAcquiredMs = next.acquiredAt - deadAt;
      fault.facts.toldBeforeNext =
        section.lostSeq !== undefined && section.lostSeq < next.acquiredSeq;
    }
    this.reply(worker, read.requestId, readResult);
    const settled = await this.waitFor(() => section.releasedSeq !== undefined, 15_000);
    if (!settled) {
      fault.problems.push('the holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.outcome = section.outcome;
    fault.facts.signalAbortedAtWrite = section.signalAbortedAtWrite;
    fault.facts.staleWriteRefused = section.writeSeq !== undefined && !section.writeAccepted;
    // No fencing token tells a stale permit from a current one (see FencedCounter).
    if (section.writeAccepted && this.kind !== 'semaphore') {
      fault.problems.push("the holder's stale write was accepted");
    }
    if (section.outcome !== 'LockLostError') {
      fault.problems.push(`the holder's using() ended with ${section.outcome}, not LockLostError`);
    }
  }

  // ---- shutdown ------------------------------------------------------------------------------

  /** Tells every worker to stop, waits for each to close its app and exit; kills stragglers. */
  async shutdown() {
    this.interceptRead = undefined;
    const workers = [...this.workers.values()];
    await Promise.all(
      workers.map(async (worker) => {
        if (worker.exited) return;
        worker.expectedExit = true;
        if (worker.stopped) worker.child.kill('SIGCONT');
        const exited = once(worker.child, 'exit');
        if (worker.child.connected) worker.child.send({ type: 'stop' }, () => undefined);
        const timer = setTimeout(() => {
          this.violations.push(`worker ${worker.id} did not shut down within 20 s`);
          worker.child.kill('SIGKILL');
        }, 20_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await Promise.all(this.proxiesStopping);
  }
}
