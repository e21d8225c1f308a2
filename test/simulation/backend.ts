import type { LockStore } from '../../src/store/lock-store.interface.js';
import { MemorySpace } from '../../src/store/memory/memory-space.js';
import type { Network } from './network.js';
import { SimStore, type Names, type StoreSeen } from './sim-store.js';
import type { Place } from './world.js';

/** What an instance's store needs to know of the seed's module options. */
export interface StoreOptions {
  fair: boolean;
  keyPrefix: string;
  commandTimeout: number;
}

/** One instance's way to the simulated server. */
export interface Connection {
  readonly store: LockStore;
  /** The module options that name the backend, as an app would give them. */
  readonly given: Record<string, unknown>;
  /** The instance is killed: what the server sees of it. */
  drop(): void;
}

/** The simulated server of a run, which every instance reaches through a connection of its own. */
export interface Backend {
  connect(place: Place, options: StoreOptions, warn: (message: string) => void): Connection;
  /** The keys the server has listeners for. */
  listened(): string[];
  /** Once everything has shut down and every TTL has run out: what the server still holds. */
  leftovers(fail: (detail: string) => void): void;
}

/** The Redis-like server: the memory store's space, reached through a `SimStore` each. */
export class RedisLikeBackend implements Backend {
  readonly space = new MemorySpace();

  constructor(
    private readonly network: Network,
    private readonly names: Names,
    private readonly seen: StoreSeen,
  ) {}

  connect(place: Place, options: StoreOptions): Connection {
    const link = this.network.link(place);
    const store = new SimStore(this.network, link, this.space, options, this.names, this.seen);
    return { store, given: { store }, drop: () => store.dropConnection() };
  }

  listened(): string[] {
    return [...this.space.listeners.keys()];
  }

  /**
   * Whether the server holds `token` on `key` now: the mutex, a permit or a read share. A look
   * from outside, which changes nothing (no lazy expiry) and reads the server's own clock,
   * whichever instance's code asks.
   */
  holds(key: string, token: string): boolean {
    const { space } = this;
    const now = this.network.world.now();
    const held = space.locks.get(key);
    if (!held || held.expiresAt <= now) return false;
    const expiry = held.value === token ? held.expiresAt : space.holders.get(key)?.get(token);
    return expiry !== undefined && expiry > now;
  }

  leftovers(fail: (detail: string) => void): void {
    const { space } = this;
    if (space.listeners.size > 0)
      fail(`listeners left on ${[...space.listeners.keys()].join(', ')}`);
    const held = [...space.locks.keys()].filter((key) => space.live(space.locks, key));
    const queued = [space.queues, space.lines].flatMap((queues) =>
      [...queues.keys()].filter((key) => space.liveHead(queues, key) !== undefined),
    );
    if (held.length + queued.length > 0) fail(`keys left: ${[...held, ...queued].join(', ')}`);
  }
}
