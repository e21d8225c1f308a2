import type { MemorySpace, Queues } from '../../src/store/memory/memory-space.js';
import type { Network } from './network.js';
import type { Random } from './random.js';

type Entry = MemorySpace['locks'] extends Map<string, infer E> ? E : never;

/** What the Redis-like server holds: as a replica has it, or as a restart without persistence leaves it. */
interface Data {
  locks: Map<string, Entry>;
  queues: Queues;
  lines: Queues;
  /** Per key held as a semaphore or read-write lock: its holders' expiries and fencing tokens. */
  holders: Map<string, { expiries: Map<string, number>; fences: Map<string, number> }>;
  values: Map<string, Entry>;
  guards: Map<string, number>;
  fence: number;
}

const copyEntries = (entries: Map<string, Entry>) =>
  new Map([...entries].map(([key, entry]) => [key, { ...entry }]));
const copyQueues = (queues: Queues): Queues =>
  new Map(
    [...queues].map(([key, waiting]) => [
      key,
      new Map([...waiting].map(([token, place]) => [token, { ...place }])),
    ]),
  );

function copy(space: MemorySpace): Data {
  const holders: Data['holders'] = new Map();
  for (const [key, expiries] of space.holders) {
    holders.set(key, { expiries: new Map(expiries), fences: new Map(space.fencesOf(expiries)) });
  }
  return {
    locks: copyEntries(space.locks),
    queues: copyQueues(space.queues),
    lines: copyQueues(space.lines),
    holders,
    values: copyEntries(space.values),
    guards: new Map(space.guards),
    fence: space.fence,
  };
}

function refill<T>(target: Map<string, T>, from: Map<string, T>): void {
  target.clear();
  for (const [key, value] of from) target.set(key, value);
}

/** A server that holds nothing, its fencing counter gone too. */
const nothing = (): Data => ({
  locks: new Map<string, Entry>(),
  queues: new Map(),
  lines: new Map(),
  holders: new Map(),
  values: new Map<string, Entry>(),
  guards: new Map<string, number>(),
  fence: 0,
});

/**
 * Puts `data` in the place of what `space` holds. Its listeners stay: a Redis client
 * subscribes again by itself once it has reconnected, and nothing is published meanwhile.
 */
function replace(space: MemorySpace, data: Data = nothing()): void {
  refill(space.locks, copyEntries(data.locks));
  refill(space.queues, copyQueues(data.queues));
  refill(space.lines, copyQueues(data.lines));
  space.holders.clear();
  for (const [key, { expiries, fences }] of data.holders) {
    const kept = new Map(expiries);
    refill(space.fencesOf(kept), fences);
    space.holders.set(key, kept);
  }
  refill(space.values, copyEntries(data.values));
  refill(space.guards, new Map(data.guards));
  space.fence = data.fence;
}

/**
 * One loss of data at the Redis-like server, in some of the faulty runs: either it restarts
 * without persistence (everything it held is gone, its fencing counter too), or its replica is
 * promoted after it fails, and the writes of its last moments, which had not reached the
 * replica, are gone. Either way it answers nothing for a while, during which the clients keep
 * what they send and send it once it answers again (as a Redis client's offline queue does),
 * and their subscriptions come back (as a Redis client subscribes again on reconnecting).
 * `lost(since)` tells the checker that the writes applied since `since` are gone.
 *
 * @returns how long the store is down, for the deadlines' slack
 */
export function scheduleStoreLoss(
  space: MemorySpace,
  network: Network,
  random: Random,
  lost: (since: number) => void,
): number {
  const { world } = network;
  const at = random.int(0, 4_000);
  const down = random.int(10, 1_500);
  const lag = random.chance(0.5) ? random.int(0, 500) : undefined;
  let replica: Data | undefined;
  const since = lag === undefined ? -Infinity : Math.max(0, at - lag);
  if (lag !== undefined) world.after(since, () => (replica = copy(space)));
  world.after(at, () => {
    world.log(
      lag === undefined
        ? `FAULT  the store restarts empty, down for ${down} ms`
        : `FAULT  the store fails over in ${down} ms, losing what it applied in its last ${at - since} ms`,
    );
    replace(space, replica);
    lost(world.now() - (at - since));
    network.storePausedUntil = Math.max(network.storePausedUntil, world.now() + down);
  });
  return down;
}
