import { monotonicNow } from '../../engine/clock.js';
import { kindConflict, kindOfToken, markerOf, type LockKind } from '../lock-kind.js';
import {
  HANDOVER_LEASE,
  handoverTo,
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
   */
  constructor(
    private readonly space: MemorySpace,
    private readonly fair: boolean,
    private readonly nextFence: () => number,
    private readonly announce: (key: string, message: string) => void,
  ) {}

  /** @throws LockKindError when the key is held as another kind */
  acquire(key: string, token: string, ttl: number, queue: boolean): AcquireAttempt {
    const kind = kindOfToken(token);
    const marker = markerOf(kind);
    const current = this.space.live(this.space.locks, key);
    if (current && current.value !== marker) throw kindConflict(key, token, current.value);
    const holders = this.holdersOf(key);
    const now = monotonicNow();
    let fence: number | undefined;
    if (holders.has(token)) {
      holders.set(token, now + ttl);
      fence = this.nextFence();
    } else {
      let waiting = this.space.lines.has(key);
      if (waiting) {
        fence = this.grantLine(key, holders, marker, token);
        waiting = this.space.liveHead(this.space.lines, key) !== undefined;
      }
      if (fence === undefined && !waiting && fits(holders, kind)) {
        holders.set(token, now + ttl);
        fence = this.nextFence();
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
    return { acquired: false, pttl: holders.size > 0 ? Math.ceil(soonest - now) : -1 };
  }

  release(key: string, token: string, successor: string): ReleaseOutcome {
    const marker = markerOf(kindOfToken(token));
    this.space.leaveQueue(this.space.lines, key, token);
    if (this.space.live(this.space.locks, key)?.value !== marker) return { released: false };
    const holders = this.holdersOf(key);
    const released = holders.delete(token);
    const granted =
      released && this.space.lines.has(key)
        ? this.grantLine(key, holders, marker, successor)
        : undefined;
    const held = this.sync(key, holders, marker);
    if (!released) return { released: false };
    if ((!this.fair && granted === undefined) || (!held && this.space.queues.has(key))) {
      this.announce(key, '');
    }
    return granted === undefined
      ? { released: true }
      : { released: true, successorFencingToken: granted };
  }

  renew(key: string, token: string, ttl: number): boolean {
    const marker = markerOf(kindOfToken(token));
    if (this.space.live(this.space.locks, key)?.value !== marker) return false;
    const holders = this.holdersOf(key);
    if (!holders.has(token)) return false;
    holders.set(token, monotonicNow() + ttl);
    this.sync(key, holders, marker);
    return true;
  }

  /** The key's holders, those whose permit has expired dropped. */
  private holdersOf(key: string): Map<string, number> {
    const holders = this.space.holders.get(key) ?? new Map<string, number>();
    const now = monotonicNow();
    for (const [token, expiresAt] of holders) if (expiresAt <= now) holders.delete(token);
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
      if (markerOf(kind) === marker && !fits(holders, kind)) return fence;
      this.space.leaveQueue(this.space.lines, key, head);
      if (markerOf(kind) !== marker) continue;
      if (head === successor) {
        holders.set(head, monotonicNow() + ttl);
        fence = this.nextFence();
      } else {
        holders.set(head, monotonicNow() + Math.min(ttl, HANDOVER_LEASE));
        this.announce(key, handoverTo(head));
      }
    }
  }
}

/** Whether a caller of `kind` may hold a permit beside `holders`. */
function fits(holders: Map<string, number>, kind: LockKind): boolean {
  switch (kind.type) {
    case 'semaphore':
      return holders.size < kind.limit;
    case 'write':
      return holders.size === 0;
    default:
      return ![...holders.keys()].some((token) => kindOfToken(token).type === 'write');
  }
}
