import type { LockStoreCapabilities } from '../capabilities.js';
import { monotonicNow } from '../../engine/clock.js';
import { markOfToken } from '../../engine/token.js';
import {
  HANDOVER_LEASE,
  type LockEvent,
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
  type StoredLock,
  type TransferOutcome,
} from '../lock-store.interface.js';
import { kindOfToken } from '../lock-kind.js';
import { windowLeftOf } from '../throttle-window.js';
import { processSpace, type MemorySpace } from './memory-space.js';
import { MemorySharedLocks } from './memory-shared-locks.js';
import { inspectSpace } from './memory-inspect.js';
import { transferIn } from './memory-transfer.js';

/**
 * The lock store for a single process, without Redis: for single-instance apps and for unit
 * tests. It has the Redis store's semantics (TTLs, tokens, fencing tokens, renewals, release
 * notifications), but it is NOT distributed: other processes do not see its locks.
 */
export class MemoryLockStore implements LockStore {
  readonly capabilities: LockStoreCapabilities;
  private readonly subscriptions = new Set<() => void>();
  /** Semaphores and read-write locks. */
  private readonly shared: MemorySharedLocks;

  /**
   * @param fair whether waiters queue (see the Redis store); when false, releases that nobody
   *   was queued for are announced to the waiters that race for the lock
   * @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name
   */
  constructor(
    private readonly fair: boolean,
    private readonly space: MemorySpace = processSpace,
    keyPrefix: string,
  ) {
    this.capabilities = {
      backend: 'the memory store',
      queueing: fair,
      throttle: true,
      kinds: true,
      keepAlive: 'ttl',
      handles: true,
    };
    this.shared = new MemorySharedLocks(
      space,
      fair,
      keyPrefix,
      () => this.nextFence(),
      (key, event) => this.announce(key, event),
    );
  }

  async acquire(key: string, token: string, ttl: number, queue: boolean): Promise<AcquireAttempt> {
    if (kindOfToken(token).shared) return this.shared.acquire(key, token, ttl, queue);
    let held = this.space.live(this.space.locks, key);
    if (!held) {
      const head = this.liveHead(key);
      if (head === undefined || head === token) {
        this.leaveQueue(key, token);
        return { acquired: true, fencingToken: this.take(key, token, ttl) };
      }
      this.grantHead(key, '');
      held = this.space.live(this.space.locks, key);
    }
    if (held?.value === token) {
      // Reserved for this caller by a handover: as in the Redis script, it holds the lock from
      // this request on, with its TTL started again and a fencing token of its own.
      held.expiresAt = monotonicNow() + ttl;
      held.fence = this.nextFence();
      return { acquired: true, fencingToken: held.fence };
    }
    const now = monotonicNow();
    if (queue) this.space.joinQueue(this.space.queues, key, token, ttl);
    const holder = this.space.live(this.space.locks, key);
    const pttl = holder ? Math.ceil(holder.expiresAt - now) : -2;
    // The memory store's clock is the one its fencing tokens come from (see nextFence).
    const nowUs = Date.now() * 1000;
    const windowLeft = holder && windowLeftOf(holder.value, holder.fence, nowUs);
    const refused = { acquired: false as const, pttl };
    return windowLeft === undefined ? refused : { ...refused, windowLeft };
  }

  async release(key: string, token: string, successor = ''): Promise<ReleaseOutcome> {
    if (kindOfToken(token).shared) return this.shared.release(key, token, successor);
    this.leaveQueue(key, token);
    if (this.space.live(this.space.locks, key)?.value !== token) return { released: false };
    this.space.locks.delete(key);
    const granted = this.grantHead(key, successor);
    if (granted === false && !this.fair) this.announce(key, { type: 'released' });
    return typeof granted === 'number'
      ? { released: true, successorFencingToken: granted }
      : { released: true };
  }

  /** Sets the lock and issues its fencing token, as the Redis scripts do. */
  private take(key: string, token: string, ttl: number): number {
    const fence = this.nextFence();
    this.space.put(this.space.locks, key, { value: token, expiresAt: monotonicNow() + ttl, fence });
    return fence;
  }

  /** As in the Redis scripts: the last token + 1, but never below the wall clock in µs. */
  private nextFence(): number {
    this.space.fence = Math.max(this.space.fence + 1, Date.now() * 1000);
    return this.space.fence;
  }

  private liveHead(key: string): string | undefined {
    return this.space.liveHead(this.space.queues, key);
  }

  private leaveQueue(key: string, token: string): void {
    this.space.leaveQueue(this.space.queues, key, token);
  }

  /**
   * Gives the free lock to the head of the queue, as the Redis scripts' `grant_head` does, with
   * a fencing token: to `successor` at once, for its ttl; to anybody else for the handover
   * lease, announced as its turn. `false` when nobody waits.
   */
  private grantHead(key: string, successor: string): boolean | number {
    const head = this.liveHead(key);
    if (head === undefined) return false;
    const { ttl } = this.space.queues.get(key)!.get(head)!;
    this.leaveQueue(key, head);
    if (head === successor) return this.take(key, head, ttl);
    const fence = this.nextFence();
    this.space.put(this.space.locks, key, {
      value: head,
      expiresAt: monotonicNow() + Math.min(ttl, HANDOVER_LEASE),
      fence,
    });
    this.announce(key, { type: 'turn', token: head });
    return true;
  }

  /**
   * Tells the key's listeners: a turn only to those of the instance whose token it names (and to
   * those that named none), as Redis wakes only the next caller's process; a release to all.
   */
  private announce(key: string, event: LockEvent): void {
    const mark = event.type === 'turn' ? markOfToken(event.token) : undefined;
    for (const listener of this.space.listeners.get(key) ?? []) {
      const instance = this.space.instanceOf.get(listener);
      if (mark !== undefined && instance !== undefined && instance !== mark) continue;
      queueMicrotask(() => listener(event));
    }
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    const now = monotonicNow();
    return entries.map(({ key, token, ttl }) => {
      if (kindOfToken(token).shared) return this.shared.renew(key, token, ttl);
      const held = this.space.live(this.space.locks, key);
      if (held?.value !== token) return false;
      held.expiresAt = now + ttl;
      return true;
    });
  }

  async transfer(
    key: string,
    token: string,
    newToken: string,
    ttl: number,
    fencingToken: number,
  ): Promise<TransferOutcome> {
    return transferIn(this.space, { key, token, newToken, ttl, fencingToken });
  }

  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    const highestSeen = this.space.guards.get(resource) ?? 0;
    if (fencingToken < highestSeen) return { written: false, highestSeen };
    this.space.put(this.space.values, resource, {
      value,
      expiresAt: ttl > 0 ? monotonicNow() + ttl : Infinity,
    });
    this.space.guards.set(resource, fencingToken);
    return { written: true };
  }

  async isLocked(key: string): Promise<boolean> {
    return this.space.live(this.space.locks, key) !== undefined;
  }

  async inspect(key: string): Promise<StoredLock> {
    return inspectSpace(this.space, key);
  }

  /** Always up: the store is this process. */
  async ping(): Promise<Record<string, unknown>> {
    return {};
  }

  async forceRelease(key: string): Promise<number> {
    const held = this.space.live(this.space.locks, key);
    if (!held) return 0;
    if (held.value.startsWith('#')) return this.shared.forceRelease(key, held.value);
    this.space.locks.delete(key);
    if (this.grantHead(key, '') === false) this.announce(key, { type: 'released' });
    return 1;
  }

  async subscribe(
    key: string,
    onEvent: (event: LockEvent) => void,
    instance?: string,
  ): Promise<() => void> {
    if (instance !== undefined) this.space.instanceOf.set(onEvent, instance);
    let listeners = this.space.listeners.get(key);
    if (!listeners) this.space.listeners.set(key, (listeners = new Set()));
    const unsubscribe = () => {
      this.subscriptions.delete(unsubscribe);
      listeners.delete(onEvent);
      if (listeners.size === 0 && this.space.listeners.get(key) === listeners) {
        this.space.listeners.delete(key);
      }
    };
    listeners.add(onEvent);
    this.subscriptions.add(unsubscribe);
    return unsubscribe;
  }

  async close(): Promise<void> {
    for (const unsubscribe of [...this.subscriptions]) unsubscribe();
  }
}
