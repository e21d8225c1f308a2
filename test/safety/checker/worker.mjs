/**
 * One contender of the safety checker: a separate OS process, forked by the checker, that boots
 * its own Nest application context with `LockModule.forRoot` (its own Redis connections) and
 * runs critical sections on ONE key until told to stop.
 *
 * The critical section is a non-atomic read-modify-write of a counter kept in the PARENT
 * process (reached over the fork IPC channel): read, a few ms of "work", write value + 1 with
 * the lock's fencing token. The worker deliberately writes even when its lock's signal is
 * aborted, so that the resource's fencing guard, not the worker's good manners, has to stop
 * a stale holder. Whether the signal was aborted before the write is reported.
 *
 * The checker may change, over IPC, the TTL of the worker's next calls and how long its
 * sections "work" (a `config` message); the worker reports when each call starts to wait, with
 * the TTL it asked for, so that the checker knows who is waiting and for what.
 *
 * On SIGTERM the worker shuts down as a deployed app does (Nest's shutdown hooks close its
 * application context, which lets the section running under a lock finish under it) and exits
 * by itself; it tells the checker it is draining, and which of its calls were refused meanwhile.
 * Each call's `acquired` message carries when it was made and when its first attempt was sent
 * and answered (see first-attempts.mjs), for the arrival-order check.
 *
 * On the checker's request, the worker also hands off the lock of a running section, adopts the
 * handles it is given and runs a section under each lock it adopted (see hand-offs.mjs), or
 * stops making calls and makes one with `waitTimeout: 0` at a moment it is given, as all the
 * others do at that moment (see tick-contender.mjs).
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 *
 * Configuration comes in the environment: CHECKER_REDIS_URL, CHECKER_KEY,
 * CHECKER_KEY_PREFIX, CHECKER_TTL, CHECKER_WAIT_TIMEOUT, CHECKER_COMMAND_TIMEOUT; for RedLock,
 * CHECKER_REDIS_URLS (the masters, comma-separated) and CHECKER_NODE_TIMEOUT instead of the
 * URL and the command timeout; for ZooKeeper, CHECKER_ZOOKEEPER (a connection string) and
 * CHECKER_ZOOKEEPER_ROOT instead of the URL; for PostgreSQL, CHECKER_POSTGRES (a URL) and
 * CHECKER_POSTGRES_NAME (its connections' application_name). CHECKER_KIND picks the kind of
 * lock: `mutex` (the default), `semaphore:<limit>` (every section holds a permit), or `rw` (a
 * section is a writer one time in three, and otherwise a reader, whose write the resource only
 * records as the end of its read). With CHECKER_LEADER=1 the worker also stands in the run's
 * leader election (see leader-candidate.mjs). CHECKER_CLIENT picks the client library of the
 * single Redis's connection (`ioredis`, the default, `iovalkey`, `node-redis` or `glide`; see
 * watched-clients.mjs).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockConnectionError, LockLostError, LockModule, LockService } from 'nestjs-redis-lock';
import { FirstAttempts, sharedNow } from './first-attempts.mjs';
import { handOffsOnRequest } from './hand-offs.mjs';
import { candidateProvider, resignOnRequest } from './leader-candidate.mjs';
import { randomInt } from './random.mjs';
import { TickContender } from './tick-contender.mjs';
import { watchedClient } from './watched-clients.mjs';

/** @import { CheckerMessage, ReadReply, WriteReply } from './checker.mjs' */
/** @import { CallTiming } from './first-attempts.mjs' */
/** @import { Lock, LockHandle } from 'nestjs-redis-lock' */

/**
 * What a worker sends the checker.
 * @typedef {{ type: 'ready', pid: number, clock: number }
 *   | { type: 'waiting', ttl: number }
 *   | { type: 'draining' }
 *   | ({ type: 'acquired', token: number, lockToken: string } & SectionStart)
 *   | { type: 'lost', token: number, reason: string }
 *   | ReadRequest
 *   | WriteRequest
 *   | {
 *       type: 'released',
 *       token: number | undefined,
 *       outcome: string,
 *       wrote: boolean,
 *       signalAbortedAtWrite: boolean,
 *     }
 *   | {
 *       type: 'acquireFailed',
 *       error: string,
 *       ttl: number,
 *       grantedButLost: 'lost' | 'expired' | undefined,
 *       grantRttMs: number | undefined,
 *       message: string,
 *       draining: boolean,
 *       waitedFromBeforeDrain: boolean,
 *     }
 *   | { type: 'closed' }
 *   | { type: 'lead' | 'deposed' | 'leaderWrite', epoch: number, at?: number, reason?: string }
 *   | { type: 'handle', token: number, handle?: LockHandle, error?: string, message?: string }
 *   | { type: 'adoption', label: string, fencingToken?: number, error?: string, message?: string }
 *   | { type: 'paused' }
 *   | { type: 'tickResult', round: number, acquired: boolean, error?: string, lateMs: number }
 * } WorkerMessage
 */
/**
 * What an `acquired` message tells besides the lock's tokens: the TTL asked for, how long the
 * call waited, a read-write lock's share, when the call was made and its first attempt sent
 * (calls that wait in line), and whether the lock was adopted from a handle rather than granted.
 * @typedef {{
 *   ttl: number,
 *   waitedMs: number,
 *   share: 'read' | 'write' | undefined,
 *   call?: CallTiming,
 *   adopted?: boolean,
 * }} SectionStart
 */
/** @typedef {{ wrote: boolean, signalAbortedAtWrite: boolean }} SectionState */
/**
 * Runs one call that gets a lock and the critical section under it (see `sectionCall`).
 * @typedef {(
 *   call: (section: (lock: Lock) => Promise<void>) => Promise<unknown>,
 *   start: () => SectionStart,
 *   workMs?: [number, number],
 * ) => Promise<{ error: unknown } | undefined>} SectionCall
 */
/** @typedef {{ type: 'read', requestId: number, token: number }} ReadRequest */
/**
 * @typedef {{
 *   type: 'write',
 *   requestId: number,
 *   token: number,
 *   value: number,
 *   signalAbortedAtWrite: boolean,
 * }} WriteRequest
 */

const env = process.env;
const key = env.CHECKER_KEY ?? 'checker';
const ttl = Number(env.CHECKER_TTL ?? 400);
const masters = env.CHECKER_REDIS_URLS ? env.CHECKER_REDIS_URLS.split(',') : undefined;
const kind = env.CHECKER_KIND ?? 'mutex';
const callers = Number(env.CHECKER_CALLERS ?? 1);
const limit = kind.startsWith('semaphore:') ? Number(kind.slice('semaphore:'.length)) : undefined;
/** The ZooKeeper mode's server (through the checker's proxy for this worker), if any. */
const zookeeper = env.CHECKER_ZOOKEEPER || undefined;
/** Whether the worker also stands in the run's leader election (the `leader` nemesis). */
const candidate = env.CHECKER_LEADER === '1';

/** @param {WorkerMessage} message */
function send(message) {
  // With a callback, a message the checker can no longer take (it is closing the channel) is
  // dropped instead of crashing the worker with an unhandled EPIPE.
  if (process.connected) process.send?.(message, undefined, {}, () => undefined);
}

// The parent went away (crashed test run): nothing else will ever stop us.
process.on('disconnect', () => process.exit(0));

let nextRequest = 1;
/** @type {Map<number, (reply: ReadReply | WriteReply) => void>} */
const pending = new Map();
let stopping = false;
/**
 * The TTL of the next calls, when the checker set one; the module's default otherwise.
 * @type {number | undefined}
 */
let callTtl;
/**
 * How long a section works, in ms (drawn between the two).
 * @type {[number, number]}
 */
let work = [1, 5];
/**
 * The locks of this worker's sections while they run, by fencing token: the checker names the
 * one to hand off by its token (see hand-offs.mjs).
 * @type {Map<number, Lock>}
 */
const held = new Map();

process.on('message', (/** @type {CheckerMessage} */ message) => {
  if (message?.type === 'reply') {
    const resolve = pending.get(message.requestId);
    pending.delete(message.requestId);
    resolve?.(message);
  } else if (message?.type === 'stop') {
    stopping = true;
  } else if (message?.type === 'config') {
    callTtl = message.ttl;
    work = message.work ?? [1, 5];
  }
});

/**
 * @overload
 * @param {Omit<ReadRequest, 'requestId'>} message
 * @returns {Promise<ReadReply>}
 */
/**
 * @overload
 * @param {Omit<WriteRequest, 'requestId'>} message
 * @returns {Promise<WriteReply>}
 */
/**
 * A request to the resource in the parent; resolves with its reply.
 * @param {Omit<ReadRequest, 'requestId'> | Omit<WriteRequest, 'requestId'>} message
 * @returns {Promise<ReadReply | WriteReply>}
 */
function request(message) {
  const requestId = nextRequest++;
  return new Promise((resolve) => {
    pending.set(requestId, resolve);
    send({ ...message, requestId });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The commands that granted this worker a lock (the acquire script answering `[1, fencing
 * token]`) during the current call: when each was sent, and how long its answer took, in ms. A
 * lock found expired when its answer came is only excused by an answer that took about its
 * TTL. Several answers can come in one read, so the call keeps them all. Measured on the single
 * Redis's command connection, which the worker creates for that (RedLock: not measured).
 * @type {{ sentAt: number, rttMs: number }[]}
 */
const grants = [];
/** The first attempt of each call, as the command connection sends it. */
const firstAttempts = new FirstAttempts(env.CHECKER_CLIENT === 'glide');

/**
 * Watches a command sent on the single Redis's command connection: a first attempt of a call,
 * and a grant's round trip.
 * @type {import('./watched-clients.mjs').CommandWatcher}
 */
function watchCommand(command) {
  const sentAt = performance.now();
  firstAttempts.sent(command);
  command.promise.then(
    (reply) => {
      if (Array.isArray(reply) && Number(reply[0]) === 1 && Number(reply[1]) > 1) {
        grants.push({ sentAt, rttMs: performance.now() - sentAt });
      }
    },
    () => undefined,
  );
}
const connection =
  masters || zookeeper || env.CHECKER_POSTGRES
    ? undefined
    : await watchedClient(
        /** @type {import('./watched-clients.mjs').CheckerClient} */ (
          env.CHECKER_CLIENT || 'ioredis'
        ),
        env.CHECKER_REDIS_URL ?? '',
        watchCommand,
      );

/** The PostgreSQL mode's database (through the checker's proxy for this worker), if any. */
const postgres = env.CHECKER_POSTGRES || undefined;

/** The backend's module options: PostgreSQL, ZooKeeper, RedLock's masters, or the one Redis. */
function backendOptions() {
  if (postgres) {
    return {
      // Its own name, by which the checker's `terminate` finds its connections.
      postgres: { connectionString: postgres, application_name: env.CHECKER_POSTGRES_NAME },
      commandTimeout: Number(env.CHECKER_COMMAND_TIMEOUT ?? 1000),
    };
  }
  if (zookeeper) {
    return {
      // The session is the lease: the ttl may be two thirds of it.
      zookeeper: {
        connectionString: zookeeper,
        sessionTimeout: Math.ceil(ttl * 1.5),
        root: env.CHECKER_ZOOKEEPER_ROOT,
      },
      commandTimeout: Number(env.CHECKER_COMMAND_TIMEOUT ?? 1000),
    };
  }
  // RedLock bounds each master by nodeTimeout and refuses commandTimeout at boot.
  return masters
    ? { redis: masters, nodeTimeout: Number(env.CHECKER_NODE_TIMEOUT ?? 100) }
    : {
        ...connection?.moduleOptions,
        commandTimeout: Number(env.CHECKER_COMMAND_TIMEOUT ?? 1000),
      };
}

class CheckerWorkerModule {}
// A class decorator applied by hand: it records metadata on the class and returns nothing.
Module({
  imports: [
    LockModule.forRoot({
      ...backendOptions(),
      keyPrefix: env.CHECKER_KEY_PREFIX ?? 'lock:',
      ttl,
      waitTimeout: Number(env.CHECKER_WAIT_TIMEOUT ?? 5000),
    }),
  ],
  providers: candidate ? [candidateProvider(send, ttl)] : [],
})(CheckerWorkerModule);

const app = await NestFactory.createApplicationContext(CheckerWorkerModule, {
  logger: ['error'],
  abortOnError: false,
});
const locks = app.get(LockService);
if (candidate) resignOnRequest(app);
handOffsOnRequest(locks, held, send, sectionCall);
/** Pauses the callers, and makes the calls of the `tick` rounds. */
const contender = new TickContender(callers, send, () =>
  sectionCall(
    (section) => locks.using(key, section, { waitTimeout: 0 }),
    () => ({ ttl, waitedMs: 0, share: undefined }),
  ),
);
/**
 * When SIGTERM came (on the shared clock), if it did: the app is draining. The listener comes
 * before Nest's own, and goes after one signal, so that Nest's re-raising of the signal once the
 * app is closed ends the process.
 * @type {number | undefined}
 */
let drainingSince;
process.once('SIGTERM', () => {
  drainingSince = sharedNow();
  send({ type: 'draining' });
});
app.enableShutdownHooks(['SIGTERM']);
send({ type: 'ready', pid: process.pid, clock: sharedNow() });

/**
 * How `using` failed although Redis had granted the lock, before the section could start: the
 * lock was reported `lost`, or found `expired` when the answer came.
 * @param {unknown} error
 * @returns {'lost' | 'expired' | undefined}
 */
function grantedButLost(error) {
  if (error instanceof LockLostError) return 'lost';
  if (error instanceof LockConnectionError && error.reason.includes('granted')) return 'expired';
  return undefined;
}

/**
 * One critical section under `lock`: tells the checker that it holds the lock (and when its
 * signal aborts), reads the counter, works, and writes it back plus one, signal aborted or not.
 * Records in `state` whether it wrote, and whether its signal had aborted by then.
 * @param {Lock} lock
 * @param {SectionStart} start the rest of the `acquired` message
 * @param {SectionState} state
 * @param {[number, number]} [workMs] how long the section works, drawn between the two
 */
async function criticalSection(lock, start, state, workMs = work) {
  const token = lock.fencingToken;
  held.set(token, lock);
  try {
    // The lock's own token too: it is what the lock key holds in Redis, which the checker
    // reads to see on which masters the lock is.
    send({ type: 'acquired', token, lockToken: lock.token, ...start });
    lock.signal.addEventListener(
      'abort',
      // The library aborts a lock's signal with the LockLostError that says why.
      () => {
        /** @type {unknown} */
        const lost = lock.signal.reason;
        send({ type: 'lost', token, reason: lost instanceof LockLostError ? lost.reason : '' });
      },
      { once: true },
    );
    if (lock.signal.aborted) send({ type: 'lost', token, reason: 'aborted at start' });
    const read = await request({ type: 'read', token });
    if (!read.ok) return; // the guard refused even the read: a newer holder got there first
    await sleep(randomInt(...workMs));
    state.signalAbortedAtWrite = lock.signal.aborted;
    state.wrote = true;
    const signalAbortedAtWrite = state.signalAbortedAtWrite;
    await request({ type: 'write', token, value: read.value + 1, signalAbortedAtWrite });
  } finally {
    held.delete(token);
  }
}

/**
 * Runs one call that holds the lock for a {@link criticalSection}: `call` makes it, running
 * the section it is given under the lock it got, and settles when the call does. Tells the
 * checker how the section ended; resolves the call's error when it never held the lock.
 * @param {(section: (lock: Lock) => Promise<void>) => Promise<unknown>} call
 * @param {() => SectionStart} start the rest of the `acquired` message, once the lock is held
 * @param {[number, number]} [workMs]
 * @returns {Promise<{ error: unknown } | undefined>}
 */
async function sectionCall(call, start, workMs) {
  /** @type {number | undefined} */
  let token;
  /** @type {SectionState} */
  const state = { wrote: false, signalAbortedAtWrite: false };
  try {
    await call((lock) => {
      token = lock.fencingToken;
      return criticalSection(lock, start(), state, workMs);
    });
    send({ type: 'released', token, outcome: 'ok', ...state });
  } catch (error) {
    if (token === undefined) return { error };
    const outcome = error instanceof Error ? error.name : typeof error;
    send({ type: 'released', token, outcome, ...state });
  }
  return undefined;
}

/**
 * One caller: critical sections, one after the other, until told to stop.
 * @param {unknown} _
 * @param {number} index which caller of the worker it is
 */
async function runSections(_, index) {
  while (!stopping) {
    await contender.untilResumed();
    if (stopping) break;
    const sectionTtl = callTtl ?? ttl;
    const workMs = work;
    const waitStarted = performance.now();
    /** @type {CallTiming | undefined} */
    let timing;
    // Grants of this call are those sent since it started (other callers' too, with several:
    // their answer times are then only a looser excuse); keep the list short.
    grants.splice(0, Math.max(0, grants.length - 64));
    /** @type {'read' | 'write' | undefined} */
    const share = kind === 'rw' ? (randomInt(1, 3) === 1 ? 'write' : 'read') : undefined;
    send({ type: 'waiting', ttl: sectionTtl });
    const failed = await sectionCall(
      async (section) => {
        const call = firstAttempts.call(index, () =>
          locks.using(
            key,
            (lock) => {
              if (timing) firstAttempts.adopt(timing, lock.token);
              return section(lock);
            },
            { ttl: sectionTtl, ...(limit ? { limit } : {}), ...(share ? { mode: share } : {}) },
          ),
        );
        timing = call.timing;
        await call.result;
      },
      () => ({
        ttl: sectionTtl,
        waitedMs: Math.round(performance.now() - waitStarted),
        share,
        call: timing,
      }),
      workMs,
    );
    if (failed) {
      // Never got the lock (timed out waiting, Redis down): back off a little and retry.
      const { error } = failed;
      const rtts = grants.filter((grant) => grant.sentAt >= waitStarted).map((g) => g.rttMs);
      send({
        type: 'acquireFailed',
        error: error instanceof Error ? error.name : typeof error,
        ttl: sectionTtl,
        grantedButLost: grantedButLost(error),
        grantRttMs: rtts.length > 0 ? Math.round(Math.max(...rtts)) : undefined,
        message: error instanceof Error ? error.message : String(error),
        draining: drainingSince !== undefined,
        waitedFromBeforeDrain:
          drainingSince !== undefined && (timing?.calledAt ?? 0) < drainingSince,
      });
      await sleep(randomInt(5, 30));
    }
  }
}

// Several callers run side by side: a release then hands the lock to the next of them (the
// same-process handover) as often as to another process.
await Promise.all(Array.from({ length: callers }, runSections));

await app.close();
await connection?.close();
send({ type: 'closed' });
process.disconnect?.();
