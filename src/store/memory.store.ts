import { FENCE_TTL } from '../lock.constants.js';
import { monotonicNow } from '../lock.js';
import type { AcquireAttempt, LockStore, RenewalEntry } from './lock-store.interface.js';

interface Expiring<T> {
  value: T;
  /** Monotonic ms at which the entry no longer exists. */
  expiresAt: number;
}

/**
 * The state that every memory store of the process shares, as every client of one Redis
 * shares that server: two LockModules in one process exclude each other.
 */
export class MemorySpace {
  readonly locks = new Map<string, Expiring<string>>();
  readonly fences = new Map<string, Expiring<number>>();
  readonly listeners = new Map<string, Set<() => void>>();

  /** The entry under `key`, dropping it first if it has expired (Redis expires lazily too). */
  live<T>(entries: Map<string, Expiring<T>>, key: string): Expiring<T> | undefined {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= monotonicNow()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  }
}

/** @internal The memory shared by the process; tests look into it as they look into Redis. */
export const processSpace = new MemorySpace();

/**
 * The lock store for a single process, without Redis: for single-instance apps and for unit
 * tests. It has the Redis store's semantics (TTLs, tokens, fencing tokens, renewals, release
 * notifications), but it is NOT distributed: other processes do not see its locks.
 */
export class MemoryLockStore implements LockStore {
  private readonly subscriptions = new Set<() => void>();

  constructor(private readonly space: MemorySpace = processSpace) {}

  async acquire(key: string, token: string, ttl: number): Promise<AcquireAttempt> {
    const held = this.space.live(this.space.locks, key);
    const now = monotonicNow();
    if (held) return { acquired: false, pttl: Math.ceil(held.expiresAt - now) };
    this.space.locks.set(key, { value: token, expiresAt: now + ttl });
    // As in the Redis script: the last token + 1, but never below the wall clock in µs.
    const last = this.space.live(this.space.fences, key)?.value ?? 0;
    const fencingToken = Math.max(last + 1, Date.now() * 1000);
    this.space.fences.set(key, { value: fencingToken, expiresAt: now + Math.max(ttl, FENCE_TTL) });
    return { acquired: true, fencingToken };
  }

  async release(key: string, token: string): Promise<boolean> {
    if (this.space.live(this.space.locks, key)?.value !== token) return false;
    this.space.locks.delete(key);
    for (const listener of this.space.listeners.get(key) ?? []) queueMicrotask(listener);
    return true;
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    const now = monotonicNow();
    return entries.map(({ key, token, ttl }) => {
      const held = this.space.live(this.space.locks, key);
      if (held?.value !== token) return false;
      held.expiresAt = now + ttl;
      return true;
    });
  }

  async isLocked(key: string): Promise<boolean> {
    return this.space.live(this.space.locks, key) !== undefined;
  }

  async subscribe(key: string, onRelease: () => void): Promise<() => void> {
    let listeners = this.space.listeners.get(key);
    if (!listeners) this.space.listeners.set(key, (listeners = new Set()));
    const unsubscribe = () => {
      this.subscriptions.delete(unsubscribe);
      listeners.delete(onRelease);
      if (listeners.size === 0 && this.space.listeners.get(key) === listeners) {
        this.space.listeners.delete(key);
      }
    };
    listeners.add(onRelease);
    this.subscriptions.add(unsubscribe);
    return unsubscribe;
  }

  async close(): Promise<void> {
    for (const unsubscribe of [...this.subscriptions]) unsubscribe();
  }
}
