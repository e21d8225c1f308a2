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
import { candidateProvider, resignOnRequest } from './leader-candidate.mjs';
import { randomInt } from './random.mjs';
import { watchedClient } from './watched-clients.mjs';

/** @import { CheckerMessage, ReadReply, WriteReply } from './checker.mjs' */
/** @import { CallTiming } from './first-attempts.mjs' */

/**
 * What a worker sends the checker.
 * @typedef {{ type: 'ready', pid: number, clock: number }
 *   | { type: 'waiting', ttl: number }
 *   | { type: 'draining' }
 *   | {
 *       type: 'acquired',
 *       token: number,
 *       lockToken: string,
 *       ttl: number,
 *       waitedMs: number,
 *       share: 'read' | 'write' | undefined,
 *       call: CallTiming,
 *     }
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
 * } WorkerMessage
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
/** How long a section works, in ms (drawn between the two). */
let work = [1, 5];

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
 * One caller: critical sections, one after the other, until told to stop.
 * @param {unknown} _
 * @param {number} index which caller of the worker it is
 */
async function runSections(_, index) {
  while (!stopping) {
    /** @type {number | undefined} */
    let fencingToken;
    let signalAbortedAtWrite = false;
    let wrote = false;
    const sectionTtl = callTtl ?? ttl;
    const [minWork, maxWork] = work;
    const waitStarted = performance.now();
    /** @type {CallTiming | undefined} */
    let timing;
    // Grants of this call are those sent since it started (other callers' too, with several:
    // their answer times are then only a looser excuse); keep the list short.
    grants.splice(0, Math.max(0, grants.length - 64));
    /** @type {'read' | 'write' | undefined} */
    const share = kind === 'rw' ? (randomInt(1, 3) === 1 ? 'write' : 'read') : undefined;
    send({ type: 'waiting', ttl: sectionTtl });
    try {
      const call = firstAttempts.call(index, () =>
        locks.using(
          key,
          async (lock) => {
            fencingToken = lock.fencingToken;
            const token = lock.fencingToken;
            if (timing) firstAttempts.adopt(timing, lock.token);
            // The lock's own token too: it is what the lock key holds in Redis, which the checker
            // reads to see on which masters the lock is.
            send({
              type: 'acquired',
              token,
              lockToken: lock.token,
              ttl: sectionTtl,
              waitedMs: Math.round(performance.now() - waitStarted),
              share,
              call: /** @type {CallTiming} */ (timing),
            });
            lock.signal.addEventListener(
              'abort',
              // The library aborts a lock's signal with the LockLostError that says why.
              () => {
                /** @type {unknown} */
                const lost = lock.signal.reason;
                send({
                  type: 'lost',
                  token,
                  reason: lost instanceof LockLostError ? lost.reason : '',
                });
              },
              { once: true },
            );
            if (lock.signal.aborted) send({ type: 'lost', token, reason: 'aborted at start' });
            const read = await request({ type: 'read', token });
            if (!read.ok) return; // the guard refused even the read: a newer holder got there first
            await sleep(randomInt(minWork, maxWork));
            signalAbortedAtWrite = lock.signal.aborted;
            wrote = true;
            await request({ type: 'write', token, value: read.value + 1, signalAbortedAtWrite });
          },
          { ttl: sectionTtl, ...(limit ? { limit } : {}), ...(share ? { mode: share } : {}) },
        ),
      );
      timing = call.timing;
      await call.result;
      send({ type: 'released', token: fencingToken, outcome: 'ok', wrote, signalAbortedAtWrite });
    } catch (error) {
      const name = error instanceof Error ? error.name : typeof error;
      if (fencingToken === undefined) {
        // Never got the lock (timed out waiting, Redis down): back off a little and retry.
        const rtts = grants.filter((grant) => grant.sentAt >= waitStarted).map((g) => g.rttMs);
        send({
          type: 'acquireFailed',
          error: name,
          ttl: sectionTtl,
          grantedButLost: grantedButLost(error),
          grantRttMs: rtts.length > 0 ? Math.round(Math.max(...rtts)) : undefined,
          message: error instanceof Error ? error.message : String(error),
          draining: drainingSince !== undefined,
          waitedFromBeforeDrain:
            drainingSince !== undefined && (timing?.calledAt ?? 0) < drainingSince,
        });
        await sleep(randomInt(5, 30));
      } else {
        send({ type: 'released', token: fencingToken, outcome: name, wrote, signalAbortedAtWrite });
      }
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
