import type { AcquireOptions } from '../../src/index.js';
import { until } from './backends.js';
import type { Contender, HeldLock } from './lock-child.js';

/*
 * First come, first served across app instances: the workloads, run by each spec on its own
 * instances (processes of their own, or the test's for the memory store), which assert the
 * order they report. Each caller comes once the one before it has taken its place in the
 * store's line (as `inspect` counts it): the order of arrival is an awaited fact, not a guess
 * about how long a loaded machine takes to send an attempt.
 */

/** How long a holder that should have company waits for it before it lets go anyway. */
const COMPANY_BOUND = 2_000;

/** Callers waiting for a lock, by name, in the order they were started. */
type Waits = Map<string, Promise<HeldLock>>;

/** The first of `waits` to get in, taken out of them. */
async function nextIn(waits: Waits): Promise<[string, HeldLock]> {
  const [name, lock] = await Promise.race(
    [...waits].map(([name, wait]) => wait.then((lock) => [name, lock] as const)),
  );
  waits.delete(name);
  return [name, lock];
}

/** Lets each of `waits` in as it comes, and out at once: their names in the order they got in. */
async function drain(waits: Waits, served: string[] = []): Promise<string[]> {
  while (waits.size > 0) {
    const [name, lock] = await nextIn(waits);
    served.push(name);
    await lock.release();
  }
  return served;
}

/**
 * Starts the callers `[name, instance, options]` one after another, each once the one before
 * it waits in the store's line; returns when the last one does too.
 */
async function arrive(
  callers: readonly (readonly [string, Contender, AcquireOptions])[],
  key: string,
): Promise<Waits> {
  const waits: Waits = new Map();
  for (const [name, instance, options] of callers) {
    waits.set(name, instance.acquire(key, options));
    const inLine = waits.size;
    await until(async () => (await instance.waiting(key)) >= inLine, 10_000);
  }
  return waits;
}

/**
 * `holder` takes all `limit` permits of `key` (a mutex when `limit` is 1); A1–A4 of `early`
 * come, then B1 of `late`; then one permit at a time is given back (the oldest held first) and
 * the one caller it lets in awaited. The callers' names in the order they got in.
 */
export async function servedInOrder(
  [holder, early, late]: readonly Contender[],
  key: string,
  limit = 1,
): Promise<string[]> {
  const options: AcquireOptions = limit > 1 ? { limit } : {};
  const held: HeldLock[] = [];
  for (let i = 0; i < limit; i++) held.push(await holder.acquire(key, options));
  const waits = await arrive(
    [
      ...['A1', 'A2', 'A3', 'A4'].map((name) => [name, early, options] as const),
      ['B1', late, options] as const,
    ],
    key,
  );
  const served: string[] = [];
  while (waits.size > 0) {
    await held.shift()!.release();
    const [name, lock] = await nextIn(waits);
    served.push(name);
    held.push(lock);
  }
  for (const lock of held) await lock.release();
  return served;
}

/**
 * A writer of `holder` holds `key`; readers R1 and R2 of `readers` come, then a writer W2 of
 * `writer`. Once the first writer lets go, R1 stays in until R2 has joined it (or for
 * {@link COMPANY_BOUND} ms if R2 does not come), then everybody is let out as they come. Who
 * was in with R1, and the order in which they all got in.
 */
export async function readersTogether(
  [holder, readers, writer]: readonly Contender[],
  key: string,
): Promise<{ withFirst: string[]; served: string[] }> {
  const first = await holder.acquire(key, { mode: 'write' });
  const waits = await arrive(
    [
      ['R1', readers, { mode: 'read' }],
      ['R2', readers, { mode: 'read' }],
      ['W2', writer, { mode: 'write' }],
    ],
    key,
  );
  await first.release();
  const [name, lock] = await nextIn(waits);
  const company = nextIn(waits);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<undefined>(
    (resolve) => (timer = setTimeout(() => resolve(undefined), COMPANY_BOUND)),
  );
  const joined = await Promise.race([company, bound]);
  clearTimeout(timer);
  const withFirst = joined ? [name, joined[0]] : [name];
  await lock.release();
  const [other, otherLock] = joined ?? (await company);
  await otherLock.release();
  return { withFirst, served: await drain(waits, [name, other]) };
}

/**
 * `holder` holds `key`; a caller of its own instance and one of `other` wait (in that order);
 * the holder gives the lock back and asks again at once. The order they got in: the holder's
 * second turn must come last.
 */
export async function releaserAsksAgain(
  [holder, other]: readonly Contender[],
  key: string,
): Promise<string[]> {
  const lock = await holder.acquire(key);
  const waits = await arrive(
    [
      ['mine', holder, {}],
      ['theirs', other, {}],
    ],
    key,
  );
  waits.set('again', lock.again());
  return drain(waits);
}
