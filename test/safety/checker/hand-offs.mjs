/**
 * The worker's side of the `forge` nemesis (see forge.mjs): it hands off the lock of one of its
 * running sections when the checker names it by its fencing token, and adopts the handles the
 * checker presents to it, genuine or not.
 *
 * - `{ type: 'handOff', token }`: `lock.handOff()` on the section's lock; answers `{ type:
 *   'handle', token, handle }`, or `{ type: 'handle', token, error, message }` if it failed.
 *   The section goes on as any does (the checker answers its pending read).
 * - `{ type: 'adopt', label, handle }`: `locks.adopt(handle)`, answered `{ type: 'adoption',
 *   label, fencingToken }` once adopted, or `{ type: 'adoption', label, error, message }` if
 *   refused. An adopted lock runs a critical section as a granted one does (its `acquired` says
 *   `adopted`), is released, and its section ends as `using` would have ended it.
 */

/** @import { Lock, LockHandle, LockService } from 'nestjs-redis-lock' */
/** @import { SectionCall, SectionStart, WorkerMessage } from './worker.mjs' */

/**
 * What the checker asks of a worker here.
 * @typedef {{ type: 'handOff', token: number } | { type: 'adopt', label: string, handle: LockHandle }} HandOffRequest
 */

/** @param {unknown} error */
const nameOf = (error) => (error instanceof Error ? error.name : typeof error);
/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

/**
 * Answers the checker's hand-off and adoption requests.
 * @param {LockService} locks
 * @param {Map<number, Lock>} held the locks of the worker's running sections, by fencing token
 * @param {(message: WorkerMessage) => void} send
 * @param {SectionCall} sectionCall runs a critical section under the lock a call got
 */
export function handOffsOnRequest(locks, held, send, sectionCall) {
  process.on('message', (/** @type {HandOffRequest | undefined} */ message) => {
    if (message?.type === 'handOff') void handOff(held, send, message.token);
    else if (message?.type === 'adopt') void adopt(locks, send, sectionCall, message);
  });
}

/**
 * @param {Map<number, Lock>} held
 * @param {(message: WorkerMessage) => void} send
 * @param {number} token
 */
async function handOff(held, send, token) {
  try {
    const lock = held.get(token);
    if (!lock) throw new Error(`no section runs under the fencing token ${token}`);
    send({ type: 'handle', token, handle: await lock.handOff() });
  } catch (error) {
    send({ type: 'handle', token, error: nameOf(error), message: messageOf(error) });
  }
}

/**
 * Adopts the handle and runs a section under the lock; released at its end. The section ends
 * with the LockLostError of a lock lost meanwhile, as under `using`.
 * @param {LockService} locks
 * @param {(message: WorkerMessage) => void} send
 * @param {SectionCall} sectionCall
 * @param {{ label: string, handle: LockHandle }} request
 */
async function adopt(locks, send, sectionCall, { label, handle }) {
  /** @type {() => SectionStart} */
  const start = () => ({ ttl: handle.ttl, waitedMs: 0, share: undefined, adopted: true });
  const failed = await sectionCall(async (section) => {
    const lock = await locks.adopt(handle);
    send({ type: 'adoption', label, fencingToken: lock.fencingToken });
    try {
      await section(lock);
    } finally {
      await lock.release().catch(() => false);
    }
    if (lock.signal.aborted) throw lock.signal.reason;
  }, start);
  if (failed) {
    const { error } = failed;
    send({ type: 'adoption', label, error: nameOf(error), message: messageOf(error) });
  }
}
