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
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 *
 * Configuration comes in the environment: CHECKER_REDIS_URL, CHECKER_KEY,
 * CHECKER_KEY_PREFIX, CHECKER_TTL, CHECKER_WAIT_TIMEOUT, CHECKER_COMMAND_TIMEOUT; for RedLock,
 * CHECKER_REDIS_URLS (the masters, comma-separated) and CHECKER_NODE_TIMEOUT instead of the
 * URL and the command timeout.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockLostError, LockModule, LockService } from 'nestjs-redis-lock';

const env = process.env;
const key = env.CHECKER_KEY ?? 'checker';
const ttl = Number(env.CHECKER_TTL ?? 400);
const masters = env.CHECKER_REDIS_URLS ? env.CHECKER_REDIS_URLS.split(',') : undefined;

/** @param {Record<string, unknown>} message */
function send(message) {
  if (process.connected) process.send?.(message);
}

// The parent went away (crashed test run): nothing else will ever stop us.
process.on('disconnect', () => process.exit(0));

/**
 * The checker's answer to a request (see checker.mjs): `ok` whether the fencing guard let it
 * through, and for a read the counter's value.
 * @typedef {{ type: 'reply', requestId: number, ok: boolean, value: number }} Reply
 */

let nextRequest = 1;
/** @type {Map<number, (reply: Reply) => void>} */
const pending = new Map();
let stopping = false;

process.on('message', (/** @type {Reply | { type: 'stop' }} */ message) => {
  if (message?.type === 'reply') {
    const resolve = pending.get(message.requestId);
    pending.delete(message.requestId);
    resolve?.(message);
  } else if (message?.type === 'stop') {
    stopping = true;
  }
});

/**
 * A request to the resource in the parent; resolves with its reply.
 * @param {'read' | 'write'} op
 * @param {Record<string, unknown>} fields
 * @returns {Promise<Reply>}
 */
function request(op, fields) {
  const requestId = nextRequest++;
  return new Promise((resolve) => {
    pending.set(requestId, resolve);
    send({ type: op, requestId, ...fields });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** @param {number} min @param {number} max */
const randomInt = (min, max) => min + Math.floor(Math.random() * (max - min + 1));

class CheckerWorkerModule {}
// A class decorator applied by hand: it records metadata on the class and returns nothing.
Module({
  imports: [
    LockModule.forRoot({
      redis: masters ?? env.CHECKER_REDIS_URL,
      keyPrefix: env.CHECKER_KEY_PREFIX ?? 'lock:',
      ttl,
      waitTimeout: Number(env.CHECKER_WAIT_TIMEOUT ?? 5000),
      // RedLock bounds each master by nodeTimeout and refuses commandTimeout at boot.
      ...(masters
        ? { nodeTimeout: Number(env.CHECKER_NODE_TIMEOUT ?? 100) }
        : { commandTimeout: Number(env.CHECKER_COMMAND_TIMEOUT ?? 1000) }),
    }),
  ],
})(CheckerWorkerModule);

const app = await NestFactory.createApplicationContext(CheckerWorkerModule, {
  logger: ['error'],
  abortOnError: false,
});
const locks = app.get(LockService);
send({ type: 'ready', pid: process.pid });

while (!stopping) {
  /** @type {number | undefined} */
  let fencingToken;
  let signalAbortedAtWrite = false;
  let wrote = false;
  try {
    await locks.using(key, async (lock) => {
      fencingToken = lock.fencingToken;
      const token = lock.fencingToken;
      // The lock's own token too: it is what the lock key holds in Redis, which the checker
      // reads to see on which masters the lock is.
      send({ type: 'acquired', token, lockToken: lock.token });
      lock.signal.addEventListener(
        'abort',
        () => {
          const lost = lock.signal.reason instanceof LockLostError ? lock.signal.reason : undefined;
          send({ type: 'lost', token, reason: lost?.reason ?? '' });
        },
        { once: true },
      );
      if (lock.signal.aborted) send({ type: 'lost', token, reason: 'aborted at start' });
      const read = await request('read', { token });
      if (!read.ok) return; // the guard refused even the read: a newer holder got there first
      await sleep(randomInt(1, 5));
      signalAbortedAtWrite = lock.signal.aborted;
      wrote = true;
      await request('write', { token, value: read.value + 1, signalAbortedAtWrite });
    });
    send({ type: 'released', token: fencingToken, outcome: 'ok', wrote, signalAbortedAtWrite });
  } catch (error) {
    const name = error instanceof Error ? error.name : typeof error;
    if (fencingToken === undefined) {
      // Never got the lock (timed out waiting, Redis down): back off a little and retry.
      send({ type: 'acquireFailed', error: name });
      await sleep(randomInt(5, 30));
    } else {
      send({ type: 'released', token: fencingToken, outcome: name, wrote, signalAbortedAtWrite });
    }
  }
}

await app.close();
send({ type: 'closed' });
process.disconnect?.();
