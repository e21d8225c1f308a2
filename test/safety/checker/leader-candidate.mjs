/**
 * The worker's side of the `leader` nemesis (see leader.mjs): a provider whose `@Leader` method
 * stands in the run's election, and the resignations the checker asks for.
 *
 * Each term reports `{ type: 'lead', epoch, at }` when it begins and `{ type: 'deposed', epoch,
 * at, reason }` when its signal aborts (times on the machine's shared monotonic clock), and
 * writes `{ type: 'leaderWrite', epoch }` to the checker's fenced resource every 50 ms from its
 * start until a second after its signal aborted: whether or not it has, so that the resource's
 * guard, not the leader's manners, has to refuse a deposed leader.
 */
import { Injectable } from '@nestjs/common';
import { Leader, LeaderService } from 'nestjs-redis-lock';
import { sharedNow } from './first-attempts.mjs';

/** The election every worker stands in. */
export const ELECTION = 'checker';

/**
 * The provider class whose method leads, for the worker's module.
 * @param {(message: import('./worker.mjs').WorkerMessage) => void} send
 * @param {number} ttl the election's ttl
 */
export function candidateProvider(send, ttl) {
  class Candidate {
    /** @param {import('nestjs-redis-lock').Leadership} leadership */
    work(leadership) {
      const { epoch, signal } = leadership;
      send({ type: 'lead', epoch, at: sharedNow() });
      const writes = setInterval(() => send({ type: 'leaderWrite', epoch }), 50);
      writes.unref();
      signal.addEventListener(
        'abort',
        () => {
          /** @type {unknown} */
          const reason = signal.reason;
          send({ type: 'deposed', epoch, at: sharedNow(), reason: String(reason) });
          setTimeout(() => clearInterval(writes), 1_000).unref();
        },
        { once: true },
      );
    }
  }
  Injectable()(Candidate);
  const descriptor = /** @type {PropertyDescriptor} */ (
    Object.getOwnPropertyDescriptor(Candidate.prototype, 'work')
  );
  Leader(ELECTION, { ttl })(Candidate.prototype, 'work', descriptor);
  return Candidate;
}

/**
 * Resigns the election when the checker says `{ type: 'resign' }`.
 * @param {import('@nestjs/common').INestApplicationContext} app
 */
export function resignOnRequest(app) {
  const leaders = app.get(LeaderService);
  process.on('message', (/** @type {{ type?: string }} */ message) => {
    if (message?.type === 'resign') void leaders.resign(ELECTION);
  });
}
