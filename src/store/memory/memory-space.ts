import { monotonicNow } from '../../engine/clock.js';

interface Expiring<T> {
  value: T;
  /** Monotonic ms at which the entry no longer exists. */
  expiresAt: number;
}

/** A queued waiter's place: when its lease ends (monotonic ms) and the TTL it asked for. */
export interface QueuePlace {
  leaseEnd: number;
  ttl: number;
}

/** A map is swept once it has doubled since its last sweep, and never below this size. */
const SWEEP_MIN = 1_024;

/**
 * The state that every memory store of the process shares, as every client of one Redis
 * shares that server: two LockModules in one process exclude each other.
 */
export class MemorySpace {
  readonly locks = new Map<string, Expiring<string>>();
  /**
   * The last fencing token issued, for every key: one counter for the process, as one per
   * server in Redis, so that keys locked once leave nothing behind.
   */
  fence = 0;
  /** Per key, the queued waiters in arrival order: token to lease end and requested TTL. */
  readonly queues = new Map<string, Map<string, QueuePlace>>();
  readonly listeners = new Map<string, Set<(message: string) => void>>();
  /** Values written through the fencing guard, and the highest token each guard has seen. */
  readonly values = new Map<string, Expiring<string>>();
  readonly guards = new Map<string, number>();
  /** Per map, how many entries it kept at its last sweep. */
  private readonly swept = new WeakMap<Map<string, Expiring<unknown>>, number>();

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
}

/** @internal The memory shared by the process; tests look into it as they look into Redis. */
export const processSpace = new MemorySpace();
