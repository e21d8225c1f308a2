import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Lock } from 'nestjs-redis-lock';
import type { RawFloorAdapter, RawHandle } from '../adapters/raw-floor.js';
import type { ThisLibraryAdapter } from '../adapters/this-library.js';
import { CONFIG } from '../config.js';
import { countCommands, type CommandCount } from '../redis/commands.js';
import type { TracedSend } from '../redis/instrument.js';
import type { BenchClients } from '../redis/server.js';
import { max, min, now, round, sleep } from '../stats.js';

/** TTL of the floor's locks, which nothing renews while the n are taken and released. */
const FLOOR_TTL = 600_000;

const gc = (globalThis as { gc?: () => void }).gc;

/** Whether heap figures are exact (node --expose-gc) or include garbage not yet collected. */
export const gcExposed = typeof gc === 'function';

/**
 * Live heap, after full collections when node runs with --expose-gc. The pause first lets
 * pending callbacks (late replies, timers) run, so that their garbage is collectable.
 */
async function heapUsed(): Promise<number> {
  await sleep(20);
  for (let i = 0; i < 3; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

export interface HeldMemory {
  locks: number;
  acquireMs: number;
  releaseMs: number;
  /** Heap growth while the locks are held, per lock (the benchmark's own handle array excluded). */
  heapPerLockBytes: number;
  /** Heap still grown after every lock was released, per lock: what a leak would leave. */
  heapAfterReleasePerLockBytes: number;
}

export interface HeldRenewal {
  ttlMs: number;
  /** ttl / 3: the library's documented renewal period. */
  periodMs: number;
  holdMs: number;
  /** Locks whose signal was aborted during the hold (should be 0). */
  lost: number;
  /** Everything Redis executed for the library during the hold. */
  commands: CommandCount;
  /** EVALSHA calls per second (server count), as the renewals' requests. */
  evalshaPerSec: number;
  /** All commands per second (server count, including GET/PEXPIRE inside the renew script). */
  serverCommandsPerSec: number;
  /** Batches of renewals sent, told apart by a quiet gap of more than 100 ms. */
  ticks: number;
  tickDetail: RenewalTick[];
  /** Commands sent per tick. */
  scriptCallsPerTick: number;
  /**
   * Locks renewed per renewal request (script call): Redis's PEXPIRE count, one per renewed
   * lock, over its EVALSHA count.
   */
  locksPerRenewalRequest: number;
  /**
   * Event-loop delay while the locks were held (a 1 ms probe, perf_hooks' histogram): what
   * the watchdog's ticks cost the application's other work. `max` is the longest stall.
   */
  eventLoopDelay: { p50Ms: number; p99Ms: number; maxMs: number };
  /**
   * Round trips per connection in the worst tick: sends on a connection with no reply in
   * between leave together (pipelined) and count as one.
   */
  roundTripsPerConnectionPerTick: number;
  /** Most connections that sent renewals in one tick. */
  connections: number;
  pttl: {
    sampledLocks: number;
    everyMs: number;
    /** Lowest PTTL seen on any sampled lock during the hold. */
    minMs: number;
    /** ttl − minMs: the longest any sampled lock went without renewal (± everyMs). */
    longestUnrenewedMs: number;
    /** longestUnrenewedMs − periodMs: how much later than its schedule a renewal landed. */
    lagMs: number;
  };
}

export interface HeldResult {
  gcExposed: boolean;
  library: HeldMemory & { renewal: HeldRenewal };
  floor: HeldMemory;
}

/**
 * Fills `handles` (allocated before the baseline, so it does not count) with `n` locks, at
 * most `acquireConcurrency` in flight: a bounded queue is what a server under load looks like,
 * and it keeps ioredis's own buffers from growing with n.
 */
async function fill<H>(handles: H[], acquire: (i: number) => Promise<H>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONFIG.held.acquireConcurrency }, async () => {
      while (next < handles.length) {
        const i = next++;
        handles[i] = await acquire(i);
      }
    }),
  );
}

async function drain<H>(handles: H[], release: (handle: H) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONFIG.held.acquireConcurrency }, async () => {
      while (next < handles.length) await release(handles[next++]);
    }),
  );
}

/** Acquire n locks, measure the heap, optionally hold them for a while, release them all. */
async function holdMany<H>(
  n: number,
  acquire: (i: number) => Promise<H>,
  release: (handle: H) => Promise<unknown>,
  whileHeld: (handles: H[]) => Promise<void> = async () => {},
): Promise<HeldMemory> {
  const handles: H[] = new Array<H>(n).fill(undefined as H);
  const baseline = await heapUsed();
  let start = now();
  await fill(handles, acquire);
  const acquireMs = now() - start;
  const held = await heapUsed();
  await whileHeld(handles);
  start = now();
  await drain(handles, release);
  const releaseMs = now() - start;
  // Drop our references, so that what remains is what the implementation itself kept.
  handles.fill(undefined as H);
  const after = await heapUsed();
  return {
    locks: n,
    acquireMs: round(acquireMs),
    releaseMs: round(releaseMs),
    heapPerLockBytes: round((held - baseline) / n, 1),
    heapAfterReleasePerLockBytes: round((after - baseline) / n, 1),
  };
}

/**
 * Workload 6: this library holding `locks` locks with the watchdog on for `periods` renewal
 * periods: heap per held lock, renewal traffic (from the server's counts and from the sends'
 * trace), and how close the sampled locks came to expiring. The floor holds as many bare
 * `SET NX PX` locks for the memory reference (and renews nothing).
 */
export async function runHeldLocks(
  library: ThisLibraryAdapter,
  floor: RawFloorAdapter,
  clients: BenchClients,
): Promise<HeldResult> {
  const { locks: n, ttl, periods, sampled, sampleEveryMs } = CONFIG.held;
  const periodMs = ttl / 3;
  let renewal: HeldRenewal | undefined;

  const libraryMemory = await holdMany<Lock>(
    n,
    (i) => library.acquire(`held:${i}`, ttl, 0),
    (lock) => library.release(lock),
    async (handles) => {
      const sample = Array.from(
        { length: sampled },
        (_, i) => handles[Math.floor((i * n) / sampled)],
      );
      const holdMs = periods * periodMs;
      const trace = library.counter.traceSends();
      let minPttl = Infinity;
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const holdStart = now();
      let holdEnd = holdStart;
      const { commands } = await countCommands(
        clients,
        library.counter,
        async () => {
          const until = now() + holdMs;
          while (now() < until) {
            const pttls = await Promise.all(sample.map((lock) => clients.work.pttl(lock.key)));
            minPttl = Math.min(minPttl, min(pttls));
            await sleep(sampleEveryMs);
          }
          holdEnd = now();
        },
        0,
      );
      delay.disable();
      const sends = trace.stop();
      const evalsha = commands.serverByName.evalsha ?? 0;
      const ticks = groupSends(sends, holdStart);
      const seconds = (holdEnd - holdStart) / 1000;
      renewal = {
        ttlMs: ttl,
        periodMs: round(periodMs),
        holdMs: round(holdEnd - holdStart),
        lost: handles.filter((lock) => lock.signal.aborted).length,
        commands,
        evalshaPerSec: round((commands.serverByName.evalsha ?? 0) / seconds, 1),
        serverCommandsPerSec: round(commands.server / seconds, 1),
        ticks: ticks.length,
        scriptCallsPerTick: round(sends.length / Math.max(1, ticks.length)),
        locksPerRenewalRequest: round(
          (commands.serverByName.pexpire ?? 0) / Math.max(1, evalsha),
          1,
        ),
        eventLoopDelay: {
          p50Ms: round(delay.percentile(50) / 1e6, 3),
          p99Ms: round(delay.percentile(99) / 1e6, 3),
          maxMs: round(delay.max / 1e6, 3),
        },
        roundTripsPerConnectionPerTick: round(
          max(ticks.map((tick) => tick.roundTrips / tick.connections)),
        ),
        tickDetail: ticks,
        connections: max(ticks.map((tick) => tick.connections)),
        pttl: {
          sampledLocks: sampled,
          everyMs: sampleEveryMs,
          minMs: minPttl,
          longestUnrenewedMs: ttl - minPttl,
          lagMs: ttl - minPttl - round(periodMs),
        },
      };
    },
  );

  // The floor renews nothing: its locks must outlive the filling of all n on a busy machine.
  const floorMemory = await holdMany<RawHandle>(
    n,
    (i) => floor.acquire(`held:${i}`, FLOOR_TTL),
    (handle) => floor.release(handle),
  );

  return {
    gcExposed,
    library: { ...libraryMemory, renewal: renewal! },
    floor: floorMemory,
  };
}

export interface RenewalTick {
  /** ms after the hold began. */
  atMs: number;
  sends: number;
  /** Connections that sent renewals in this tick. */
  connections: number;
  /** Round trips (runs of pipelined sends, see `TracedSend.roundTrip`), over all connections. */
  roundTrips: number;
  /** Commands by name, e.g. a NOSCRIPT fallback shows as `eval`. */
  byName: Record<string, number>;
}

/**
 * Ticks: runs of sends separated by more than 100 ms of silence (the watchdog's ticks are
 * hundreds of ms apart).
 */
function groupSends(sends: readonly TracedSend[], since: number): RenewalTick[] {
  const groups: TracedSend[][] = [];
  let lastAt = -Infinity;
  for (const send of sends) {
    if (send.at - lastAt > 100) groups.push([]);
    groups[groups.length - 1].push(send);
    lastAt = send.at;
  }
  return groups.map((group) => {
    const byName: Record<string, number> = {};
    for (const send of group) byName[send.name] = (byName[send.name] ?? 0) + 1;
    return {
      atMs: round(group[0].at - since),
      sends: group.length,
      connections: new Set(group.map((send) => send.connection)).size,
      roundTrips: new Set(group.map((send) => `${send.connection}:${send.roundTrip}`)).size,
      byName,
    };
  });
}
