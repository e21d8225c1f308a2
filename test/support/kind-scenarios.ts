import type { AcquireOptions, Lock } from '../../src/index.js';
import { until } from './backends.js';
import { sleep, type LockApp } from './lock-app.js';

/*
 * The workloads that show a semaphore or a read-write lock keeps its promises, whatever the
 * store: each spec runs them on its own instances and asserts what they measured.
 */

/** A short, random time inside, so that holders overlap in every order. */
const briefly = () => sleep(2 + Math.random() * 8);

/**
 * `callers` callers, spread over `apps`, each take a permit of a semaphore of `limit` on `key`:
 * the most that were inside at once (a non-atomic count), and every permit's fencing token.
 */
export async function crowdSemaphore(
  apps: readonly LockApp[],
  key: string,
  limit: number,
  callers: number,
): Promise<{ most: number; fences: number[] }> {
  let inside = 0;
  let most = 0;
  const fences: number[] = [];
  await Promise.all(
    Array.from({ length: callers }, (_, i) =>
      apps[i % apps.length].locks.using(
        key,
        async (lock) => {
          fences.push(lock.fencingToken);
          most = Math.max(most, ++inside);
          await briefly();
          inside--;
        },
        { limit },
      ),
    ),
  );
  return { most, fences };
}

/**
 * `callers` callers, spread over `apps`, read `key`, and one in `writerEvery` writes it: who
 * was inside with whom when it should not have been, the most readers inside at once, and every
 * holder's fencing token.
 */
export async function crowdReadWrite(
  apps: readonly LockApp[],
  key: string,
  callers: number,
  writerEvery: number,
): Promise<{ clashes: string[]; mostReaders: number; fences: number[] }> {
  let readers = 0;
  let writers = 0;
  let mostReaders = 0;
  const clashes: string[] = [];
  const fences: number[] = [];
  await Promise.all(
    Array.from({ length: callers }, (_, i) => {
      const mode = i % writerEvery === 0 ? 'write' : 'read';
      return apps[i % apps.length].locks.using(
        key,
        async (lock) => {
          fences.push(lock.fencingToken);
          if (mode === 'write') {
            if (readers > 0 || writers > 0) clashes.push(`writer ${i} with ${readers} readers`);
            writers++;
          } else {
            if (writers > 0) clashes.push(`reader ${i} with a writer`);
            mostReaders = Math.max(mostReaders, ++readers);
          }
          await briefly();
          if (mode === 'write') writers--;
          else readers--;
        },
        { mode },
      );
    }),
  );
  return { clashes, mostReaders, fences };
}

/**
 * Readers of `apps[1]` and `apps[2]` keep coming to `key` (one every `gapMs`, each inside for
 * `readMs`, so that they overlap without a gap), and a writer of `apps[0]` asks amid them.
 * `queued()` says when the writer stands in the store's line. Returns the readers that came
 * after that and got in before the writer (none, if the writer is not starved), and how many
 * readers came while the writer waited (some, or the test proved nothing).
 */
export async function writerAmidReaders(
  apps: readonly LockApp[],
  key: string,
  queued: () => Promise<boolean>,
  { readMs, gapMs }: { readMs: number; gapMs: number },
): Promise<{ cutIn: number[]; launchedWhileWaiting: number }> {
  let launched = 0;
  let stop = false;
  let writerIn = false;
  const cutIn: number[] = [];
  const readers: Promise<void>[] = [];
  let queuedAt = Infinity;
  const stream = (async () => {
    while (!stop) {
      const index = launched++;
      readers.push(
        apps[1 + (index % 2)].locks.using(
          key,
          async () => {
            if (!writerIn && index >= queuedAt) cutIn.push(index);
            await sleep(readMs);
          },
          { mode: 'read' },
        ),
      );
      await sleep(gapMs);
    }
  })();
  // Readers overlap without a gap: a writer that waited for none to be inside would starve.
  await until(async () => launched >= 20);
  const writer = apps[0].locks.using(
    key,
    () => {
      writerIn = true;
    },
    { mode: 'write' },
  );
  await until(queued);
  queuedAt = launched;
  await writer;
  const launchedWhileWaiting = launched - queuedAt;
  stop = true;
  await stream;
  await Promise.all(readers);
  return { cutIn, launchedWhileWaiting };
}

/**
 * Callers line up for `key` one after the other, each of `apps[app]` with its options, each
 * once the one before it stands in the store's line (`lineLength` grew): every caller takes
 * its place there with its first attempt, whether or not a caller of its instance waits
 * already. Their acquisitions, and their indexes as they get in.
 */
async function lineUp(
  apps: readonly LockApp[],
  key: string,
  callers: readonly (readonly [app: number, options: AcquireOptions])[],
  lineLength: () => Promise<number>,
): Promise<{ waits: Promise<Lock>[]; entered: number[] }> {
  const entered: number[] = [];
  const waits: Promise<Lock>[] = [];
  for (const [app, options] of callers) {
    const before = await lineLength();
    const index = waits.length;
    waits.push(
      apps[app].locks.acquire(key, options).then((lock) => {
        entered.push(index);
        return lock;
      }),
    );
    await until(async () => (await lineLength()) > before);
  }
  return { waits, entered };
}

/**
 * Two permits of a semaphore of 2 held by `apps[0]`; callers of `order` (instance indexes) line
 * up, and the oldest permit is given back one at a time. Who had got in after each give-back
 * (indexes in line order, if the semaphore serves its waiters in the order they came).
 */
export async function semaphoreInOrder(
  apps: readonly LockApp[],
  key: string,
  order: readonly number[],
  lineLength: () => Promise<number>,
): Promise<number[][]> {
  const permits = await Promise.all([0, 1].map(() => apps[0].locks.acquire(key, { limit: 2 })));
  const callers = order.map((app) => [app, { limit: 2 }] as const);
  const { waits, entered } = await lineUp(apps, key, callers, lineLength);
  const seen: number[][] = [];
  for (const wait of waits) {
    await permits.shift()!.release();
    permits.push(await wait);
    await sleep(20);
    seen.push([...entered]);
  }
  for (const lock of permits) await lock.release();
  return seen;
}

/**
 * A writer of `apps[0]` holds `key`; a reader, a writer and two readers (of instances 1, 2, 0
 * and 1) line up behind it, and each holder lets go in turn. Who had got in once the first
 * holder had let go, once the first reader had, and in the end (names such as `read0`).
 */
export async function readersAndWritersInOrder(
  apps: readonly LockApp[],
  key: string,
  lineLength: () => Promise<number>,
): Promise<string[][]> {
  const held = await apps[0].locks.acquire(key, { mode: 'write' });
  const modes = ['read', 'write', 'read', 'read'] as const;
  const callers = modes.map((mode, i) => [[1, 2, 0, 1][i], { mode }] as const);
  const { waits, entered } = await lineUp(apps, key, callers, lineLength);
  const names = () => entered.map((i) => `${modes[i]}${i}`);
  const seen: string[][] = [];
  await held.release();
  const firstReader = await waits[0];
  await sleep(50);
  seen.push(names());
  await firstReader.release();
  const writer = await waits[1];
  await sleep(50);
  seen.push(names());
  await writer.release();
  const lastReaders = await Promise.all(waits.slice(2));
  seen.push(names());
  await Promise.all(lastReaders.map((lock) => lock.release()));
  return seen;
}
