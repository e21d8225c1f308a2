/**
 * An app instance in a process of its own (its own Nest application context, LockModule and
 * connections: Redis, or a ZooKeeper session), whose callers the test drives over IPC, for
 * tests of what several processes see of one lock. Messages from the test, each for a caller
 * `id` that the test picks:
 *
 * - `{ id, acquire: key, options }`: calls `acquire(key, options)`; answers
 *   `{ id, acquired: fencingToken }` or `{ id, error: 'Name: message' }`; with `called: id2`,
 *   also answers `{ id: id2, called: true }` once the call has been made and what it sends at
 *   once has been sent (on the event loop's next turn);
 * - `{ id, adopt: handle }`: calls `adopt(handle)` (a `LockHandle`); answered as an `acquire`;
 * - `{ id, release: true }`: releases that caller's lock; answers `{ id, released }`;
 * - `{ id, again: newId }`: releases that caller's lock and, as soon as the release has
 *   answered, asks for the same key with the same options as caller `newId`, which is answered
 *   as an `acquire`;
 * - `{ id, inspect: key }`: answers `{ id, waiting }`, how many callers wait for `key` in the
 *   store's line (`inspect(key).waiting`).
 *
 * It reports `{ booted: true }` once booted, or `{ error }` when the boot fails, and exits. When the test disconnects, it closes the app (its
 * queue places and nodes go with it) and exits.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because child
 * processes cannot run TypeScript through ts-jest. The module options come as JSON in
 * LOCK_PROCESS_OPTIONS.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

/** @type {unknown} */
const given = JSON.parse(process.env.LOCK_PROCESS_OPTIONS ?? '{}');
const options = /** @type {import('nestjs-redis-lock').LockModuleOptions} */ (given);

class InstanceModule {}
Module({ imports: [LockModule.forRoot(options)] })(InstanceModule);

const app = await NestFactory.createApplicationContext(InstanceModule, {
  logger: false,
  abortOnError: false,
}).catch((/** @type {unknown} */ error) => {
  // A boot that fails is the test's to see.
  process.send?.({ error: error instanceof Error ? `${error.name}: ${error.message}` : error });
  process.exit(1);
});
const locks = app.get(LockService);
/**
 * @typedef {import('nestjs-redis-lock').AcquireOptions} AcquireOptions
 * @typedef {{ lock: import('nestjs-redis-lock').Lock, key: string, options?: AcquireOptions }} Held
 * @typedef {{ id: number, acquire?: string, options?: AcquireOptions, called?: number,
 *   release?: boolean, again?: number, adopt?: import('nestjs-redis-lock').LockHandle,
 *   inspect?: string }} Command
 */

/** Each caller's lock once it holds it, and what it asked for. @type {Map<number, Held>} */
const held = new Map();

const send = (/** @type {object} */ message) => process.send?.(message);
const failure = (/** @type {unknown} */ error) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

/** @param {number} id @param {string} key @param {AcquireOptions | undefined} options */
function acquire(id, key, options) {
  locks.acquire(key, options).then(
    (lock) => {
      held.set(id, { lock, key, options });
      send({ id, acquired: lock.fencingToken });
    },
    (error) => send({ id, error: failure(error) }),
  );
}

/** @param {number} id @returns {Promise<{ entry?: Held, released: boolean }>} */
async function release(id) {
  const entry = held.get(id);
  held.delete(id);
  return entry ? { entry, released: await entry.lock.release() } : { released: false };
}

process.on('message', (/** @type {Command} */ message) => {
  const { id } = message;
  if (message.acquire !== undefined) {
    acquire(id, message.acquire, message.options);
    const { called } = message;
    if (called !== undefined) setImmediate(() => send({ id: called, called: true }));
  } else if (message.adopt !== undefined) {
    const key = message.adopt.name;
    locks.adopt(message.adopt).then(
      (lock) => {
        held.set(id, { lock, key });
        send({ id, acquired: lock.fencingToken });
      },
      (error) => send({ id, error: failure(error) }),
    );
  } else if (message.release) {
    release(id).then(
      ({ released }) => send({ id, released }),
      (error) => send({ id, error: failure(error) }),
    );
  } else if (message.inspect !== undefined) {
    locks.inspect(message.inspect).then(
      ({ waiting }) => send({ id, waiting }),
      (error) => send({ id, error: failure(error) }),
    );
  } else if (message.again !== undefined) {
    const next = message.again;
    release(id).then(
      ({ entry }) => entry && acquire(next, entry.key, entry.options),
      (error) => send({ id: next, error: failure(error) }),
    );
  }
});

// The test went away, or is done with us: close the app, which gives back what it holds.
process.on('disconnect', () => {
  void app.close().finally(() => process.exit(0));
});

send({ booted: true });
