import type {
  AcquireAttempt,
  FencedWriteOutcome,
  LockEvent,
  LockStore,
  LockStoreCapabilities,
  ReleaseOutcome,
  RenewalEntry,
  StoredLock,
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

  /** @param options.transfer `false` for a store without `transfer` (which adopts by renewing) */
  constructor(
    private readonly inner: LockStore,
    options: { transfer?: boolean } = {},
  ) {
    this.capabilities = { ...inner.capabilities, backend: 'an own store' };
    if (inner.holdWindow) this.holdWindow = inner.holdWindow.bind(inner);
    if (inner.transfer && options.transfer !== false) this.transfer = inner.transfer.bind(inner);
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

  keepPlaces(key: string, tokens: readonly string[]): Promise<void> {
    return this.inner.keepPlaces(key, tokens);
  }

  renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    return this.inner.renew(entries);
  }

  isLocked(key: string): Promise<boolean> {
    return this.inner.isLocked(key);
  }

  inspect(key: string): Promise<StoredLock> {
    return this.inner.inspect(key);
  }

  forceRelease(key: string): Promise<number> {
    return this.inner.forceRelease(key);
  }

  ping(): Promise<Record<string, unknown>> {
    return this.inner.ping();
  }

  writeFenced(
    resource: string,
    guard: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    return this.inner.writeFenced(resource, guard, value, fencingToken, ttl);
  }

  subscribe(key: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    return this.inner.subscribe(key, onEvent);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inner.close();
  }
}
