import type {
  AcquireAttempt,
  LockEvent,
  LockStore,
  LockStoreCapabilities,
  ReleaseOutcome,
  RenewalEntry,
} from '../../src/index.js';

/**
 * A store written against the exported contract alone, as a third party writes a backend: every
 * call goes to the store it wraps (in the specs, a memory store), under a backend name of its
 * own. It counts the calls it gets, so that a spec can see the module use it.
 */
export class OwnStore implements LockStore {
  readonly capabilities: LockStoreCapabilities;
  calls = 0;
  closed = false;

  /** Where a hold's window is kept apart from the lock (see `LockStore.holdWindow`). */
  readonly holdWindow?: LockStore['holdWindow'];
  /** Where an adopted lock's hold moves to the adopter's token (see `LockStore.transfer`). */
  readonly transfer?: LockStore['transfer'];
  readonly isLocked?: LockStore['isLocked'];
  readonly inspect?: LockStore['inspect'];
  readonly forceRelease?: LockStore['forceRelease'];
  readonly writeFenced?: LockStore['writeFenced'];

  /**
   * @param options.transfer `false` for a store without `transfer` (which adopts by renewing)
   * @param options.core only the six methods every store has: none of the optional facets
   *   (`isLocked`, `inspect`, `forceRelease`, `writeFenced`, `holdWindow`,
   *   `transfer`), and so no line of waiters, throttle or hand-off either
   */
  constructor(
    private readonly inner: LockStore,
    options: { transfer?: boolean; core?: boolean } = {},
  ) {
    this.capabilities = { ...inner.capabilities, backend: 'an own store' };
    if (options.core) {
      this.capabilities = {
        ...this.capabilities,
        queueing: false,
        throttle: false,
        handles: false,
        kinds: false,
      };
      return;
    }
    if (inner.holdWindow) this.holdWindow = inner.holdWindow.bind(inner);
    if (inner.transfer && options.transfer !== false) this.transfer = inner.transfer.bind(inner);
    this.isLocked = inner.isLocked?.bind(inner);
    this.inspect = inner.inspect?.bind(inner);
    this.forceRelease = inner.forceRelease?.bind(inner);
    this.writeFenced = inner.writeFenced?.bind(inner);
  }

  acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    this.calls++;
    return this.inner.acquire(key, token, ttl, queue, inUse);
  }

  release(key: string, token: string, successor?: string): Promise<ReleaseOutcome> {
    this.calls++;
    return this.inner.release(key, token, successor);
  }

  renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    return this.inner.renew(entries);
  }

  ping(): Promise<Record<string, unknown>> {
    return this.inner.ping();
  }

  subscribe(key: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    return this.inner.subscribe(key, onEvent);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inner.close();
  }
}
