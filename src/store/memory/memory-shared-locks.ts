import { monotonicNow } from '../../engine/clock.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import { kindConflict, kindOfToken, type LockKind } from '../lock-kind.js';
import { sharedWindowLeft, windowLeftOf } from '../throttle-window.js';
import {
  HANDOVER_LEASE,
  type LockEvent,
  type AcquireAttempt,
  type ReleaseOutcome,
} from '../lock-store.interface.js';
import type { MemorySpace } from './memory-space.js';

/**
 * Semaphores and read-write locks in the memory store, with the Redis scripts' semantics (see
 * `SHARED_LUA`): the lock key holds the kind's marker while anybody holds a permit, each holder
 * expires on its own, waiters queue apart from the mutex's and are served in order, free
 * permits go to the queue first, reserved for the handover lease and announced, or at once to
 * the releaser's successor.
 */
export class MemorySharedLocks {
  /**
   * @param fair whether waiters queue; when false, a release that nobody was queued for is
   *   announced to the waiters that race for the permit
   * @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name
   */
  constructor(
    private readonly space: MemorySpace,
    private readonly fair: boolean,
    private readonly keyPrefix: string,
    private readonly nextFence: () => number,
    private readonly announce: (key: string, event: LockEvent) => void,
  ) {}

  /** @throws LockKindError when the key is held as another kind */
  acquire(key: string, token: string, ttl: number, queue: boolean): AcquireAttempt {
    const kind = kindOfToken(token);
    const marker = kind.family;
    const current = this.space.live(this.space.locks, key);
    if (current && current.value !== marker) {
      throw kindConflict(lockNameOf(this.keyPrefix, key), token, current.value);
    }
    const holders = this.holdersOf(key);
    const now = monotonicNow();
    let fence: number | undefined;
    if (holders.has(token)) {
      fence = this.hold(holders, token, now + ttl);
    } else {
      let waiting = this.space.lines.has(key);
      if (waiting) {
        fence = this.grantLine(key, holders, marker, token);
        waiting = this.space.liveHead(this.space.lines, key) !== undefined;
      }
      if (fence === undefined && !waiting && fits(holders, kind)) {
        fence = this.hold(holders, token, now + ttl);
      }
    }
    if (fence !== undefined) {
      this.sync(key, holders, marker);
      return { acquired: true, fencingToken: fence };
    }
    if (queue) this.space.joinQueue(this.space.lines, key, token, ttl);
    this.sync(key, holders, marker);
    let soonest = Infinity;
    for (const expiresAt of holders.values()) soonest = Math.min(soonest, expiresAt);
    const pttl = holders.size > 0 ? Math.ceil(soonest - now) : -1;
    const fences = this.space.fencesOf(holders);
    const nowUs = Date.now() * 1000;
    const windowLeft = sharedWindowLeft(
      [...holders.keys()].map((holder) => windowLeftOf(holder, fences.get(holder), nowUs)),
    );
    return windowLeft === undefined
      ? { acquired: false, pttl }
      : { acquired: false, pttl, windowLeft };
  }

  release(key: string, token: string, successor: string): ReleaseOutcome {
    const marker = kindOfToken(token).family;
    this.space.leaveQueue(this.space.lines, key, token);
    if (this.space.live(this.space.locks, key)?.value !== marker) return { released: false };
    const holders = this.holdersOf(key);
    const released = holders.delete(token);
    this.space.fencesOf(holders).delete(token);
    const granted =
      released && this.space.lines.has(key)
        ? this.grantLine(key, holders, marker, successor)
        : undefined;
    const held = this.sync(key, holders, marker);
    if (!released) return { released: false };
    if ((!this.fair && granted === undefined) || (!held && this.space.queues.has(key))) {
      this.announce(key, { type: 'released' });
    }
    return granted === undefined
      ? { released: true }
      : { released: true, successorFencingToken: granted };
  }

  /**
   * Evicts every holder of the key held as `marker`, and gives the freed permits to the line in
   * order, as a release does; a release notice wakes the waiters that race for them, and the
   * mutex callers queued for the key. Returns how many holders it evicted.
   */
  forceRelease(key: string, marker: string): number {
    const holders = this.holdersOf(key);
    const evicted = holders.size;
    holders.clear();
    this.space.fencesOf(holders).clear();
    if (this.space.lines.has(key)) this.grantLine(key, holders, marker, '');
    this.sync(key, holders, marker);
    this.announce(key, { type: 'released' });
    return evicted;
  }

  renew(key: string, token: string, ttl: number): boolean {
    const marker = kindOfToken(token).family;
    if (this.space.live(this.space.locks, key)?.value !== marker) return false;
    const holders = this.holdersOf(key);
    if (!holders.has(token)) return false;
    holders.set(token, monotonicNow() + ttl);
    this.sync(key, holders, marker);
    return true;
  }

  /** Makes `token` a holder until `expiresAt`, with a fencing token of its own, returned. */
  private hold(holders: Map<string, number>, token: string, expiresAt: number): number {
    holders.set(token, expiresAt);
    const fence = this.nextFence();
    this.space.fencesOf(holders).set(token, fence);
    return fence;
  }

  /** The key's holders, those whose permit has expired dropped. */
  private holdersOf(key: string): Map<string, number> {
    const holders = this.space.holders.get(key) ?? new Map<string, number>();
    const now = monotonicNow();
    const fences = this.space.fencesOf(holders);
    for (const [token, expiresAt] of holders) {
      if (expiresAt <= now) {
        holders.delete(token);
        fences.delete(token);
      }
    }
    return holders;
  }

  /**
   * Keeps the marker until the last holder's expiry, or drops it with the holders when nobody
   * holds; returns whether anybody does.
   */
  private sync(key: string, holders: Map<string, number>, marker: string): boolean {
    if (holders.size === 0) {
      this.space.holders.delete(key);
      if (this.space.locks.get(key)?.value === marker) this.space.locks.delete(key);
      return false;
    }
    this.space.putHolders(key, holders);
    let last = 0;
    for (const expiresAt of holders.values()) last = Math.max(last, expiresAt);
    this.space.put(this.space.locks, key, { value: marker, expiresAt: last });
    return true;
  }

  /**
   * Gives free permits to the waiters in order while the next one fits, as the Redis scripts'
   * `grant_line` does; returns the successor's fencing token when it got its permit at once.
   */
  private grantLine(
    key: string,
    holders: Map<string, number>,
    marker: string,
    successor: string,
  ): number | undefined {
    let fence: number | undefined;
    for (;;) {
      const head = this.space.liveHead(this.space.lines, key);
      if (head === undefined) return fence;
      const kind = kindOfToken(head);
      const { ttl } = this.space.lines.get(key)!.get(head)!;
      if (kind.family === marker && !fits(holders, kind)) return fence;
      this.space.leaveQueue(this.space.lines, key, head);
      if (kind.family !== marker) continue;
      if (head === successor) {
        fence = this.hold(holders, head, monotonicNow() + ttl);
      } else {
        holders.set(head, monotonicNow() + Math.min(ttl, HANDOVER_LEASE));
        this.announce(key, { type: 'turn', token: head });
      }
    }
  }
}

/** Whether a caller of `kind` may hold a permit beside `holders` (tokens to their expiries). */
function fits(holders: Map<string, number>, kind: LockKind): boolean {
  return kind.admits([...holders.keys()].map(kindOfToken));
}
