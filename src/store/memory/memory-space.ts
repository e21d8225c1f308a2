import { monotonicNow } from '../../engine/clock.js';
import { QUEUE_LEASE, type LockEvent } from '../lock-store.interface.js';

interface Expiring<T> {
  value: T;
  /** Monotonic ms at which the entry no longer exists. */
  expiresAt: number;
  /** A mutex's: the fencing token its holder was given (none while reserved for a waiter). */
  fence?: number;
}

/** A queued waiter's place: when its lease ends (monotonic ms) and the TTL it asked for. */
export interface QueuePlace {
  leaseEnd: number;
  ttl: number;
}

/** Per key, the queued waiters in arrival order. */
export type Queues = Map<string, Map<string, QueuePlace>>;

/** A map is swept once it has doubled since its last sweep, and never below this size. */
const SWEEP_MIN = 1_024;

/**
 * The state that every memory store of the process shares, as every client of one Redis
 * shares that server: two LockModules in one process exclude each other.
 */
export class MemorySpace {
  readonly locks = new Map<string, Expiring<string>>();
  /**
   * The last fencing token issued, for every key: one counter for the space, so that keys
   * locked once leave nothing behind. Redis keeps one per key prefix, for ACLs confined to a
   * prefix; nothing outside the process reaches this one.
   */
  fence = 0;
  /** Per key, the queued waiters in arrival order: token to lease end and requested TTL. */
  readonly queues: Queues = new Map();
  /**
   * Per key held as a semaphore or read-write lock, its holders (token to the monotonic ms of
   * its expiry) and its queue of waiters, kept apart from the mutex's as in Redis.
   */
  readonly holders = new Map<string, Map<string, number>>();
  /** The fencing token of each holder of {@link holders}, kept as long as its map of holders. */
  private readonly fences = new WeakMap<Map<string, number>, Map<string, number>>();
  readonly lines: Queues = new Map();
  readonly listeners = new Map<string, Set<(event: LockEvent) => void>>();
  /** The instance each listener subscribed for (what its tokens end with), when it said. */
  readonly instanceOf = new WeakMap<(event: LockEvent) => void, string>();
  /** Values written through the fencing guard, and the highest token each guard has seen. */
  readonly values = new Map<string, Expiring<string>>();
  readonly guards = new Map<string, number>();
  /** Per map, how many entries it kept at its last sweep. */
  private readonly swept = new WeakMap<Map<string, Expiring<unknown>>, number>();
  /** How many keys {@link holders} kept at its last sweep. */
  private holdersKept = 0;

  /** The fencing tokens of the holders in `holders` (one of {@link holders}' maps). */
  fencesOf(holders: Map<string, number>): Map<string, number> {
    let fences = this.fences.get(holders);
    if (!fences) this.fences.set(holders, (fences = new Map<string, number>()));
    return fences;
  }

  /** The longest-waiting waiter for `key` whose lease still runs; drops dead ones before it. */
  liveHead(queues: Queues, key: string): string | undefined {
    const waiting = queues.get(key);
    if (!waiting) return undefined;
    const now = monotonicNow();
    for (const [token, place] of waiting) {
      if (place.leaseEnd > now) return token;
      waiting.delete(token);
    }
    queues.delete(key);
    return undefined;
  }

  /** Takes a place in the queue for `key`, or renews its lease (keeping its place). */
  joinQueue(queues: Queues, key: string, token: string, ttl: number): void {
    let waiting = queues.get(key);
    if (!waiting) queues.set(key, (waiting = new Map<string, QueuePlace>()));
    const leaseEnd = monotonicNow() + QUEUE_LEASE;
    const place = waiting.get(token);
    if (place) place.leaseEnd = leaseEnd;
    else waiting.set(token, { leaseEnd, ttl });
  }

  leaveQueue(queues: Queues, key: string, token: string): void {
    const waiting = queues.get(key);
    if (waiting?.delete(token) && waiting.size === 0) queues.delete(key);
  }

  /**
   * Records the holders of a key held as a semaphore or read-write lock. Permits that expire
   * without a release (`holdFor`, no watchdog, a holder that never releases) would leave their
   * key here forever if nobody asks for it again: as in {@link put}, the keys whose kind marker
   * has expired (hence every holder, as the marker lives until the last one's expiry) are
   * dropped whenever the map has doubled since its last sweep.
   */
  putHolders(key: string, holders: Map<string, number>): void {
    if (this.holders.size >= 2 * Math.max(this.holdersKept, SWEEP_MIN) && !this.holders.has(key)) {
      for (const held of this.holders.keys()) {
        if (!this.live(this.locks, held)) this.holders.delete(held);
      }
      this.holdersKept = this.holders.size;
    }
    this.holders.set(key, holders);
  }

  /** The entry under `key`, dropping it first if it has expired (Redis expires lazily too). */
  live<T>(entries: Map<string, Expiring<T>>, key: string): Expiring<T> | undefined {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= monotonicNow()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /**
   * Sets an entry. Expired entries of keys that are never read again would stay forever, so
   * they are dropped here, all at once, whenever the map has doubled since its last sweep: O(1)
   * per entry amortised, no timer, and a map never holds more than twice the live entries it
   * had at its last sweep (or 2 × SWEEP_MIN).
   */
  put<T>(entries: Map<string, Expiring<T>>, key: string, entry: Expiring<T>): void {
    const kept = this.swept.get(entries) ?? 0;
    if (entries.size >= 2 * Math.max(kept, SWEEP_MIN) && !entries.has(key)) {
      const now = monotonicNow();
      for (const [swept, { expiresAt }] of entries) if (expiresAt <= now) entries.delete(swept);
      this.swept.set(entries, entries.size);
    }
    entries.set(key, entry);
  }

  /** {@link MemoryLockSpace.clear}; the fencing counter is kept, so tokens still increase. */
  clear(): void {
    this.locks.clear();
    this.queues.clear();
    this.holders.clear();
    this.lines.clear();
    this.values.clear();
    this.guards.clear();
    for (const listeners of this.listeners.values()) {
      for (const listener of [...listeners]) listener({ type: 'released' });
    }
  }
}

/** @internal The memory shared by the process; tests look into it as they look into Redis. */
export const processSpace = new MemorySpace();

/**
 * A space of locks for the in-memory store (`store: 'memory'`), passed as the module option
 * `memorySpace`. Memory stores of a process share one space unless given their own, as
 * clients of one Redis share that server; give each unit test a new space, so that no lock,
 * queue or fenced value of one test is seen by another, and give the same space to the
 * modules that stand for several instances of an app.
 *
 * @example
 * ```ts
 * let space: MemoryLockSpace;
 * beforeEach(() => (space = new MemoryLockSpace()));
 * // in each instance's testing module:
 * LockModule.forRoot({ store: 'memory', memorySpace: space })
 * ```
 */
export class MemoryLockSpace {
  /** @internal */
  readonly state = new MemorySpace();

  /**
   * Forgets every lock, queue place and fenced value of the space, as a fresh space would,
   * and prompts the space's waiters to try again. Holders learn that their locks are gone at
   * their next renewal (their `signal` aborts) or release (which resolves `false`).
   */
  clear(): void {
    this.state.clear();
  }
}
