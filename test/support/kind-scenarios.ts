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
