import { LockConnectionError, messageOf } from '../../lock.errors.js';
import type { RedisLockStore } from '../redis/redis.store.js';

/** One independent Redis master of a RedLock, with the name used in error messages. */
export interface RedlockMaster {
  /** `host:port`, never with a password. */
  readonly name: string;
  /** Its own store, whose command timeout is the per-master timeout. */
  readonly store: RedisLockStore;
}

/** What the masters said to one operation, once it was decided. */
export interface Tally<T> {
  answers: { master: RedlockMaster; value: T }[];
  failures: { master: string; error: string }[];
}

/** The tally when the operation was decided, and a promise of it once every master answered. */
export type Decision<T> = Tally<T> & { complete: Promise<Tally<T>> };

/**
 * Sends `call` to each of `masters` at once and resolves as soon as `decided` says the
 * answers so far settle the question, or when all have answered or failed. A master whose
 * connection is down fails at once instead of waiting for its timeout.
 */
export function askMasters<T>(
  masters: readonly RedlockMaster[],
  call: (store: RedisLockStore) => Promise<T>,
  decided: (answers: T[], failed: number) => boolean,
): Promise<Decision<T>> {
  let completed!: (tally: Tally<T>) => void;
  const complete = new Promise<Tally<T>>((resolve) => (completed = resolve));
  return new Promise((resolve) => {
    const tally: Tally<T> = { answers: [], failures: [] };
    let pending = masters.length;
    const settle = () => {
      pending--;
      const values = tally.answers.map(({ value }) => value);
      if (pending === 0 || decided(values, tally.failures.length)) {
        // Copies: answers that come later must not change what the caller reads.
        resolve({ answers: [...tally.answers], failures: [...tally.failures], complete });
      }
      if (pending === 0) completed(tally);
    };
    for (const master of masters) {
      const reply = master.store.reachable
        ? call(master.store)
        : Promise.reject(new Error('not connected'));
      reply.then(
        (value) => {
          tally.answers.push({ master, value });
          settle();
        },
        (error: unknown) => {
          tally.failures.push({
            master: master.name,
            error: error instanceof LockConnectionError ? error.reason : messageOf(error),
          });
          settle();
        },
      );
    }
  });
}

/** How many of `values` pass `test`. */
export function count<T>(values: readonly T[], test: (value: T) => boolean): number {
  let n = 0;
  for (const value of values) if (test(value)) n++;
  return n;
}

/** A master's renewals, all decided: a single master answers for all or fails (renewInChunks). */
export function decidedOn(renewed: (boolean | undefined)[]): boolean[] {
  if (renewed.some((outcome) => outcome === undefined)) throw new Error('renewals not decided');
  return renewed as boolean[];
}
