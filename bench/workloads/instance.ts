/**
 * One instance of workload 10, in a process of its own, as an app is deployed: for each lock
 * implementation it has the connections that implementation opens (this library's
 * `LockService` in a Nest application context of its own, with its pub/sub subscriber), and one
 * more for the critical section's counter. The benchmark drives it over IPC (see
 * instances.ts); it ends when the benchmark closes it or goes away.
 */
import 'reflect-metadata';
import type { Redis } from 'ioredis';
import { RedisSemaphoreAdapter } from '../adapters/redis-semaphore.js';
import { RedlockAdapter } from '../adapters/redlock.js';
import { CLIENT_LIBRARIES, libraryIdOn, ThisLibraryAdapter } from '../adapters/this-library.js';
import type { LockAdapter } from '../adapters/types.js';
import { CONFIG } from '../config.js';
import { CommandCounter, countDelta } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { sleep, systemNow } from '../stats.js';
import { unsafeIncrement } from './contended.js';
import type {
  InstanceReply,
  InstanceRequest,
  InstanceRoundReport,
  InstanceSection,
  InstanceTally,
} from './instances.js';

/** The implementations an instance can run, by the id the main process knows them by. */
const FACTORIES: Record<string, (url: string) => Promise<LockAdapter>> = {
  'nestjs-redis-lock': (url) => ThisLibraryAdapter.create(url),
  redlock: (url) => RedlockAdapter.create('redlock', url),
  'sesame-redlock': (url) => RedlockAdapter.create('sesame-redlock', url),
  'redis-semaphore': (url) => RedisSemaphoreAdapter.create(url),
  ...Object.fromEntries(
    CLIENT_LIBRARIES.filter((client) => client !== 'ioredis').map((client) => [
      libraryIdOn(client),
      (url: string) => ThisLibraryAdapter.create(url, libraryIdOn(client), undefined, client),
    ]),
  ),
};

interface Opened {
  instance: number;
  adapters: Map<string, LockAdapter>;
  work: Redis;
  workCounter: CommandCounter;
  /** Per implementation, the counters when its last round began. */
  marks: Map<string, { byName: Map<string, number>; work: Map<string, number>; received: number }>;
}

let opened: Opened | undefined;
let closing: Promise<void> | undefined;

async function open(url: string, ids: readonly string[], instance: number): Promise<Opened> {
  const workCounter = new CommandCounter();
  const work = await countedClient(url, workCounter);
  const adapters = new Map<string, LockAdapter>();
  try {
    for (const id of ids) {
      const create = FACTORIES[id];
      if (!create) throw new Error(`no implementation ${id} in an instance process`);
      adapters.set(id, await create(url));
    }
  } catch (error) {
    await Promise.all([...adapters.values()].map((adapter) => adapter.close()));
    await closeClient(work);
    throw error;
  }
  return { instance, adapters, work, workCounter, marks: new Map() };
}

function adapterOf(state: Opened, id: string): LockAdapter {
  const adapter = state.adapters.get(id);
  if (!adapter) throw new Error(`implementation ${id} was not opened in this instance`);
  return adapter;
}

/** One worker: `sections` times, take the lock, do the unsafe increment, release. */
async function runRound(
  state: Opened,
  request: Extract<InstanceRequest, { type: 'round' }>,
): Promise<InstanceRoundReport> {
  const adapter = adapterOf(state, request.id);
  state.marks.set(request.id, {
    byName: adapter.counter.snapshot(),
    work: state.workCounter.snapshot(),
    received: adapter.counter.received,
  });
  await sleep(Math.max(0, request.startAt - systemNow()));
  const sections: InstanceSection[] = [];
  let timeouts = 0;
  let releaseErrors = 0;
  let firstError: string | undefined;
  for (let s = 0; s < request.sections; s++) {
    const requestedAt = systemNow();
    let handle: unknown;
    try {
      handle = await adapter.acquire(request.lockKey, CONFIG.ttl, CONFIG.waitMs);
    } catch (error) {
      timeouts++;
      firstError ??= String(error);
      continue;
    }
    const enteredAt = systemNow();
    await unsafeIncrement(state.work, request.counterKey);
    sections.push({ instance: state.instance, requestedAt, enteredAt, leftAt: systemNow() });
    try {
      await adapter.release(handle);
    } catch (error) {
      releaseErrors++;
      firstError ??= String(error);
    }
  }
  return { sections, timeouts, releaseErrors, firstError, endedAt: systemNow() };
}

/** What the implementation's connections and the counter's sent since its last round began. */
function tally(state: Opened, id: string): InstanceTally {
  const adapter = adapterOf(state, id);
  const mark = state.marks.get(id);
  if (!mark) throw new Error(`no round of ${id} to tally`);
  const sentByName = countDelta(mark.byName, adapter.counter.snapshot());
  let sent = 0;
  for (const calls of sentByName.values()) sent += calls;
  const received = adapter.counter.received - mark.received;
  return {
    sent,
    sentByName,
    received,
    work: countDelta(mark.work, state.workCounter.snapshot()),
  };
}

/** Closes every connection, once; then nothing keeps the process alive. */
function shutdown(): Promise<void> {
  closing ??= (async () => {
    const state = opened;
    opened = undefined;
    if (!state) return;
    await Promise.all([...state.adapters.values()].map((adapter) => adapter.close()));
    await closeClient(state.work);
  })();
  return closing;
}

async function handle(request: InstanceRequest): Promise<InstanceReply> {
  if (request.type === 'init') {
    opened = await open(request.url, request.ids, request.instance);
    return { type: 'ready' };
  }
  if (request.type === 'close') {
    await shutdown();
    return { type: 'closed' };
  }
  if (!opened) throw new Error(`${request.type} before init, or after close`);
  if (request.type === 'round') return { type: 'round', report: await runRound(opened, request) };
  return { type: 'tally', tally: tally(opened, request.id) };
}

const send = (reply: InstanceReply, then?: () => void) =>
  process.send?.(reply, undefined, undefined, () => then?.());

process.on('message', (request: InstanceRequest) => {
  void handle(request).then(
    // After `closed`, let go of the IPC channel too, so that the process can end.
    (reply) => send(reply, reply.type === 'closed' ? () => process.disconnect() : undefined),
    (error: unknown) =>
      send({
        type: 'error',
        message: error instanceof Error ? String(error.stack) : String(error),
      }),
  );
});
// After `closed`, or when the benchmark went away (it exited, or was killed): close up, and the
// process ends; should closing hang (the benchmark's Redis gone with it), it ends anyway.
process.on('disconnect', () => {
  void shutdown();
  setTimeout(() => process.exit(1), 3_000).unref();
});
// Ctrl-C reaches every process of the terminal's group; the benchmark decides what happens then.
process.on('SIGINT', () => undefined);
