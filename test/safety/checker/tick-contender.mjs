/**
 * The worker's side of the `tick` nemesis (see ticks.mjs):
 * - `{ type: 'pause' }`: its callers make no new call once the one they are in has settled;
 *   when all of them are idle, it says `{ type: 'paused' }`.
 * - `{ type: 'tick', round, at }`: at the moment `at` on the machine's shared clock, it makes
 *   one call with `waitTimeout: 0`, as each replica of a scheduled job does at a tick, runs a
 *   critical section if it got the lock, and says `{ type: 'tickResult', round, acquired,
 *   error, lateMs }` (how late after `at` it called, when the message came after it).
 * - `{ type: 'resume' }` (or `stop`): its callers go on.
 */
import { sharedNow } from './first-attempts.mjs';

/** @import { WorkerMessage } from './worker.mjs' */

/**
 * What the checker asks of a worker here.
 * @typedef {{ type: 'pause' | 'resume' | 'stop' } | { type: 'tick', round: number, at: number }} TickRequest
 */

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class TickContender {
  /**
   * @param {number} callers how many callers the worker runs
   * @param {(message: WorkerMessage) => void} send
   * @param {() => Promise<{ error: unknown } | undefined>} attempt one call with `waitTimeout:
   *   0` and its section; resolves the error of a call that did not get the lock
   */
  constructor(callers, send, attempt) {
    this.callers = callers;
    this.send = send;
    this.attempt = attempt;
    this.paused = false;
    /** Callers waiting for the pause to end. */
    this.idle = 0;
    /** @type {Promise<void>} */
    this.resumed = Promise.resolve();
    /** @type {() => void} */
    this.resume = () => undefined;
    process.on('message', (/** @type {TickRequest | undefined} */ message) => {
      if (message?.type === 'pause') this.pause();
      else if (message?.type === 'resume' || message?.type === 'stop') this.unpause();
      else if (message?.type === 'tick') void this.tick(message.round, message.at);
    });
  }

  pause() {
    if (!this.paused) {
      this.paused = true;
      this.resumed = new Promise((resolve) => {
        this.resume = () => resolve();
      });
    }
    this.reportIdle();
  }

  unpause() {
    this.paused = false;
    this.resume();
  }

  /** Where a caller waits, before each call, while the worker is paused. */
  async untilResumed() {
    if (!this.paused) return;
    this.idle++;
    this.reportIdle();
    await this.resumed;
    this.idle--;
  }

  reportIdle() {
    if (this.paused && this.idle === this.callers) this.send({ type: 'paused' });
  }

  /**
   * @param {number} round
   * @param {number} at
   */
  async tick(round, at) {
    const early = at - sharedNow();
    if (early > 0) await sleep(early);
    const failed = await this.attempt();
    const error = failed?.error;
    this.send({
      type: 'tickResult',
      round,
      acquired: !failed,
      error: failed ? (error instanceof Error ? error.name : typeof error) : undefined,
      lateMs: Math.max(0, -early),
    });
  }
}
