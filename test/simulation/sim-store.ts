import { markOfToken } from '../../src/engine/token.js';
import type { LockStoreCapabilities } from '../../src/store/capabilities.js';
import type {
  AcquireAttempt,
  FencedWriteOutcome,
  LockEvent,
  LockStore,
  ReleaseOutcome,
  RenewalEntry,
  StoredLock,
  TransferOutcome,
} from '../../src/store/lock-store.interface.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import type { MemorySpace } from '../../src/store/memory/memory-space.js';
import { timedCommand, type TimedCommand } from '../../src/store/timed-command.js';
import type { Link, Network } from './network.js';

/** What the store's side of the simulation tells the checker, as the store applies it. */
export interface StoreSeen {
  /** The store applied an attempt of `token`'s, asked for with `ttl` (and to queue), which got `reply`. */
  attempted(
    key: string,
    token: string,
    reply: AcquireAttempt,
    asked: { ttl: number; queue: boolean },
  ): void;
  /** A release gave the lock to `token` at once (a successor of the releaser's process). */
  granted(key: string, token: string, fencingToken: number): void;
  /** `token` released the lock, or left the line, or renewed a lock it holds. */
  leftLine(key: string, token: string): void;
  /** `token` released the lock or left the line: a release applied. */
  released(key: string, token: string): void;
  /** The store renewed the lock of `token` with `ttl`. */
  renewed(key: string, token: string, ttl: number): void;
  /** The store handed the lock of `key` off to `token`, for `ttl`. */
  transferred(key: string, token: string, ttl: number): void;
  /**
   * The store granted `key` to the waiter `token`, first in line, with `fencingToken`, and
   * announces it with a `turn` (after what else the request did).
   */
  turned(key: string, token: string, fencingToken: number): void;
  /** A `turn` notice for `token` reached the listeners of the instance whose token it is. */
  told(key: string, token: string): void;
  /** A plain release's notice reached the listeners of the instance marked `instance`. */
  heardRelease?(key: string, instance: string): void;
  /** The store refused to renew the lock of `token`: it no longer held it. */
  refused(token: string): void;
  /** The instance of `token` got the answer that the store refused to renew its lock. */
  heardRefusal(token: string): void;
  /** A `forceRelease` of `key` took it from `tokens`. */
  evicted(key: string, tokens: readonly string[]): void;
}

/** Short names for tokens, in the order the run first meets them, so that traces compare. */
export class Names {
  private readonly names = new Map<string, string>();

  of(token: string): string {
    let name = this.names.get(token);
    if (name === undefined) this.names.set(token, (name = `#${this.names.size + 1}`));
    return name;
  }
}

const attempt = (reply: AcquireAttempt) =>
  reply.acquired ? `granted ${reply.fencingToken}` : `refused pttl=${reply.pttl}`;

/**
 * One instance's connection to the simulated Redis: the memory store (one {@link MemorySpace}
 * for every instance, as one server) applies each request when the network delivers it, and
 * the reply, like each notice, comes back through the network. Timeouts, and the give-back of
 * an attempt whose answer came too late, are the Redis store's own.
 */
export class SimStore implements LockStore {
  readonly capabilities: LockStoreCapabilities;
  private readonly server: MemoryLockStore;
  private readonly command: TimedCommand;
  /** What the instance's tokens end with, as its subscriptions name it. */
  private instance?: string;
  /** The instance's listeners per key, as the client library keeps them. */
  private readonly listeners = new Map<string, Set<(event: LockEvent) => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();
  /** At the store: this connection's subscription to each key. */
  private readonly subscribed = new Map<string, () => void>();

  constructor(
    private readonly network: Network,
    private readonly link: Link,
    private readonly space: MemorySpace,
    options: { fair: boolean; keyPrefix: string; commandTimeout: number },
    private readonly names: Names,
    private readonly seen: StoreSeen,
  ) {
    this.server = new MemoryLockStore(options.fair, space, options.keyPrefix);
    this.capabilities = { ...this.server.capabilities, backend: 'the simulated store' };
    this.command = timedCommand(options.commandTimeout, options.keyPrefix, 'the store');
  }

  async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    const what = `acquire ${key} ${this.names.of(token)} ttl=${ttl}${queue ? ' queue' : ''}`;
    const reply = this.call(
      key,
      what,
      async () => {
        const before = this.fenceOf(key);
        const reply = await this.server.acquire(key, token, ttl, queue);
        this.seen.attempted(key, token, reply, { ttl, queue });
        this.turned(key, before);
        return reply;
      },
      attempt,
    );
    try {
      return await reply;
    } catch (error) {
      const giveBack = () =>
        inUse() ? undefined : this.release(key, token).catch(() => undefined);
      void reply.late.then(giveBack, giveBack);
      throw error;
    }
  }

  /** The fencing token of the mutex held on `key` at the server now, if any. */
  private fenceOf(key: string): number | undefined {
    return this.space.locks.get(key)?.fence;
  }

  /**
   * Tells the checker, once the request's other effects are told, of a grant the request made
   * to the head of the line (announced with a `turn`): the mutex now carries a fencing token it
   * did not carry `before`. One already told (the attempt's own, a successor's) is told once.
   */
  private turned(key: string, before: number | undefined): void {
    const held = this.space.locks.get(key);
    if (held?.fence === undefined || held.fence === before) return;
    this.seen.turned(key, held.value, held.fence);
  }

  release(key: string, token: string, successor = ''): Promise<ReleaseOutcome> {
    const heir = successor ? ` to ${this.names.of(successor)}` : '';
    const what = `release ${key} ${this.names.of(token)}${heir}`;
    const apply = async () => {
      const before = this.fenceOf(key);
      const outcome = await this.server.release(key, token, successor);
      this.seen.leftLine(key, token);
      this.seen.released(key, token);
      const fence = outcome.successorFencingToken;
      if (fence !== undefined) this.seen.granted(key, successor, fence);
      this.turned(key, before);
      return outcome;
    };
    return this.call(key, what, apply, (outcome) =>
      outcome.released ? `released ${outcome.successorFencingToken ?? ''}` : 'not held',
    );
  }

  renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    const named = entries.map(({ key, token, ttl }) => `${key}:${this.names.of(token)}:${ttl}`);
    const key = entries[0]?.key ?? '';
    const apply = async () => {
      const renewed = await this.server.renew(entries);
      entries.forEach((entry, i) => {
        if (!renewed[i]) return this.seen.refused(entry.token);
        this.seen.leftLine(entry.key, entry.token);
        this.seen.renewed(entry.key, entry.token, entry.ttl);
      });
      return renewed;
    };
    const told = (renewed: boolean[]) => renewed.join(',');
    return this.call(key, `renew ${named.join(' ')}`, apply, told).then((renewed) => {
      // Before the engine reads the answer: a holder told that its lock is gone knows it.
      entries.forEach(({ token }, i) => renewed[i] || this.seen.heardRefusal(token));
      return renewed;
    });
  }

  transfer(
    key: string,
    token: string,
    newToken: string,
    ttl: number,
    fencingToken: number,
  ): Promise<TransferOutcome> {
    const what = `transfer ${key} ${this.names.of(token)} → ${this.names.of(newToken)}`;
    const apply = async () => {
      const outcome = await this.server.transfer(key, token, newToken, ttl, fencingToken);
      if (outcome === 'transferred') this.seen.transferred(key, newToken, ttl);
      return outcome;
    };
    return this.call(key, what, apply, String);
  }

  isLocked(key: string): Promise<boolean> {
    return this.call(key, `isLocked ${key}`, () => this.server.isLocked(key), String);
  }

  inspect(key: string): Promise<StoredLock> {
    const told = (stored: StoredLock) => `${stored.holders.length} held`;
    return this.call(key, `inspect ${key}`, () => this.server.inspect(key), told);
  }

  forceRelease(key: string): Promise<number> {
    const apply = async () => {
      const { holders } = await this.server.inspect(key);
      const before = this.fenceOf(key);
      const evicted = await this.server.forceRelease(key);
      this.seen.evicted(
        key,
        holders.map(({ token }) => token),
      );
      // The next in line is granted the lock, as after a release.
      this.turned(key, before);
      return evicted;
    };
    return this.call(key, `forceRelease ${key}`, apply, String);
  }

  ping(): Promise<Record<string, unknown>> {
    return this.call(
      '',
      'ping',
      () => this.server.ping(),
      () => 'pong',
    );
  }

  writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    const apply = () => this.server.writeFenced(resource, value, fencingToken, ttl);
    const told = (outcome: FencedWriteOutcome) => (outcome.written ? 'written' : 'refused');
    return this.call(resource, `writeFenced ${resource} ${fencingToken}`, apply, told);
  }

  /**
   * Subscribes as the Redis store does: one subscription per key on the connection, which the
   * store keeps once however often it is asked (Redis's SUBSCRIBE), shared by the listeners of
   * the instance; the last one to leave unsubscribes, and so does one whose subscription got
   * no answer in time. Each notice crosses the network, to the listeners of its arrival.
   */
  async subscribe(
    key: string,
    onEvent: (event: LockEvent) => void,
    instance?: string,
  ): Promise<() => void> {
    this.instance ??= instance;
    let listeners = this.listeners.get(key);
    if (!listeners) {
      this.listeners.set(key, (listeners = new Set()));
      const apply = async () => {
        if (!this.subscribed.has(key)) {
          const hear = (event: LockEvent) => this.hear(key, event);
          this.subscribed.set(key, await this.server.subscribe(key, hear, this.instance));
        }
      };
      const ready = this.network.roundTrip(this.link, `subscribe ${key}`, apply, () => 'ok');
      this.subscribing.set(key, ready);
      void ready.finally(() => this.subscribing.delete(key)).catch(() => undefined);
    }
    const current = listeners.add(onEvent);
    const unsubscribe = () => {
      if (!current.delete(onEvent) || current.size > 0) return;
      this.listeners.delete(key);
      const apply = async () => {
        this.subscribed.get(key)?.();
        this.subscribed.delete(key);
      };
      void this.network.roundTrip(this.link, `unsubscribe ${key}`, apply, () => 'ok');
    };
    try {
      await this.command(key, 'subscribe', () => this.subscribing.get(key) ?? Promise.resolve());
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  private hear(key: string, event: LockEvent): void {
    const what = event.type === 'turn' ? `turn ${key} ${this.names.of(event.token)}` : '';
    this.network.notify(this.link, what || `released ${key}`, () => {
      const listeners = [...(this.listeners.get(key) ?? [])];
      const ours = event.type === 'turn' && markOfToken(event.token) === this.instance;
      if (ours && listeners.length > 0) this.seen.told(key, event.token);
      if (event.type === 'released' && listeners.length > 0 && this.instance !== undefined) {
        this.seen.heardRelease?.(key, this.instance);
      }
      for (const listener of listeners) listener(event);
    });
  }

  /** Closes the connection: the client waits for nothing, and the server sees it go later. */
  async close(): Promise<void> {
    void this.network
      .roundTrip(
        this.link,
        'close',
        () => this.server.close(),
        () => 'ok',
      )
      .catch(() => undefined);
  }

  /** The instance is killed: the server drops its connection, and its subscriptions with it. */
  dropConnection(): void {
    this.network.disconnect(this.link, () => void this.server.close());
  }

  private call<T>(
    key: string,
    what: string,
    apply: () => Promise<T>,
    told: (reply: T) => string,
  ): Promise<T> & { late: Promise<T> } {
    return this.command(key, what.split(' ')[0], () =>
      this.network.roundTrip(this.link, what, apply, told),
    );
  }
}
