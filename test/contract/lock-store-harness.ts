import type {
  AcquireAttempt,
  LockEvent,
  LockModuleOptions,
  LockStore,
  LockStoreCapabilities,
} from '../../src/index.js';
import { newToken } from '../../src/engine/token.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { createStore } from '../../src/store/create-store.js';
import { until } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';
import type { ContractBackend, ContractFixture } from './contract-backends.js';

/** How long a test looks for a state it cannot await before it fails, in ms. */
export const BOUND = 10_000;

/** `inUse` of a caller that gave up: it neither holds the lock nor waits for it. */
export const gaveUp = () => false;
/** `inUse` of a caller that waits on (or holds). */
export const waitsOn = () => true;

/** A turn, as a store announces it. */
export type Turn = Extract<LockEvent, { type: 'turn' }>;

/** A fresh mutex token, as the engine makes them. */
export const token = (): string => newToken();

/**
 * What each test of the store-level contract works with: the fixture's backend, a key prefix of
 * its own, and two stores built from the fixture's module options as the module builds its
 * store (`resolveModuleOptions`, then `createStore`), as two app instances would each have one.
 */
export class StoreContract {
  backend!: ContractBackend;
  prefix = '';
  a!: LockStore;
  b!: LockStore;
  /** Problems the stores reported that no caller waited for (connection errors, say). */
  readonly warnings: string[] = [];
  private opened: LockStore[] = [];
  private readonly closing = new Map<LockStore, Promise<void>>();
  private cleanups: (() => unknown)[] = [];

  /** What the stores declare (both are built from the same options). */
  get can(): LockStoreCapabilities {
    return this.a.capabilities;
  }

  /** A TTL no test outlives, within what a session store accepts (two thirds of its session). */
  get longTtl(): number {
    return this.can.keepAlive === 'session' ? 2_000 : 20_000;
  }

  /** The full key of lock `name` under the test's prefix. */
  key(name: string): string {
    return this.prefix + name;
  }

  /**
   * Builds the store the module would build from `options` (the fixture's for the test's
   * prefix by default), opens it as the module does once the app has booted, and waits until
   * it answers: what a test times is the contract, not a client's first connection.
   */
  async open(options: LockModuleOptions = this.backend.options(this.prefix)): Promise<LockStore> {
    const warn = (message: string) => void this.warnings.push(message);
    const store = createStore(resolveModuleOptions(options), warn, () => undefined);
    this.opened.push(store);
    store.open?.();
    // Its answer to a ping, then to a release (which PostgreSQL's store answers once its
    // tables are there): the six methods every store has, none of the facets it may lack.
    const answers = () =>
      store
        .ping()
        .then(() => store.release(this.key('connected'), token()))
        .then(
          () => true,
          () => false,
        );
    await until(answers, BOUND);
    return store;
  }

  /** Closes `store` once, however often it is asked to (here or after the test). */
  close(store: LockStore): Promise<void> {
    let closed = this.closing.get(store);
    if (!closed) this.closing.set(store, (closed = store.close()));
    return closed;
  }

  /** Calls `task` every `ms` until the test ends (its failures are the test's to see elsewhere). */
  every(ms: number, task: () => Promise<unknown>): void {
    const timer = setInterval(() => void task().catch(() => undefined), ms);
    this.cleanups.push(() => clearInterval(timer));
  }

  /** Runs `cleanup` after the test, before its stores close. */
  defer(cleanup: () => unknown): void {
    this.cleanups.push(cleanup);
  }

  /** Takes `key` for `holder` on `store`, expecting a grant; resolves its fencing token. */
  async take(store: LockStore, key: string, holder: string, ttl = this.longTtl): Promise<number> {
    return fenceOf(await store.acquire(key, holder, ttl, false, waitsOn));
  }

  /** Takes `key` for `holder` on `store` once it is free, trying every few ms; its fencing token. */
  async takeOnceFree(store: LockStore, key: string, holder: string, ttl: number): Promise<number> {
    let attempt = await store.acquire(key, holder, ttl, false, gaveUp);
    const deadline = performance.now() + BOUND;
    while (!attempt.acquired && performance.now() < deadline) {
      await sleep(10);
      attempt = await store.acquire(key, holder, ttl, false, gaveUp);
    }
    return fenceOf(attempt);
  }

  /**
   * Expects `store` to say whether `key` is `locked`, where it has the facet `isLocked` (a
   * store may lack it: see `LockStore`).
   */
  async expectLocked(store: LockStore, key: string, locked: boolean): Promise<void> {
    if (store.isLocked) expect(await store.isLocked(key)).toBe(locked);
  }

  /** Subscribes to `key` on `store` until the test ends; resolves what it hears (into `heard`). */
  async listen(store: LockStore, key: string, heard = new Heard()): Promise<Heard> {
    this.cleanups.push(await store.subscribe(key, heard.listener));
    return heard;
  }

  /** Waits until `waiting` callers keep a place in the line of `key`, as the fixture counts them. */
  async waitingIs(key: string, waiting: number): Promise<void> {
    await until(async () => (await this.backend.waiting(key)) === waiting, BOUND);
  }

  /** Registers the hooks of a describe block on `start`'s backend. */
  static on(start: ContractFixture[1]): StoreContract {
    const context = new StoreContract();
    beforeAll(async () => {
      context.backend = await start();
    }, 60_000);
    beforeEach(async () => {
      context.prefix = uniquePrefix();
      context.warnings.length = 0;
      context.a = await context.open();
      context.b = await context.open();
    }, 30_000);
    afterEach(async () => {
      const [cleanups, opened] = [context.cleanups, context.opened];
      [context.cleanups, context.opened] = [[], []];
      for (const cleanup of cleanups) await cleanup();
      await Promise.all(opened.map((store) => context.close(store)));
    });
    afterAll(async () => {
      await context.backend?.stop();
    });
    return context;
  }
}

/** What a subscription heard, in order. */
export class Heard {
  readonly events: LockEvent[] = [];
  readonly listener = (event: LockEvent) => void this.events.push(event);

  /** The tokens whose turn was announced, each once, in the order first heard. */
  turns(): string[] {
    return [
      ...new Set(this.events.flatMap((event) => (event.type === 'turn' ? [event.token] : []))),
    ];
  }

  /** Waits for the announcement of `holder`'s turn. */
  async turnOf(holder: string): Promise<Turn> {
    const find = () =>
      this.events.find((event): event is Turn => event.type === 'turn' && event.token === holder);
    await until(async () => find() !== undefined, BOUND);
    return find()!;
  }

  /** Waits for an event that `matches`. */
  async hears(matches: (event: LockEvent) => boolean): Promise<void> {
    await until(async () => this.events.some(matches), BOUND);
  }
}

/** Expects a grant; returns its fencing token. */
export function fenceOf(attempt: AcquireAttempt): number {
  expect(attempt).toMatchObject({ acquired: true });
  const { fencingToken } = attempt as { fencingToken: number };
  expect([fencingToken, Number.isSafeInteger(fencingToken) && fencingToken > 0]).toEqual([
    fencingToken,
    true,
  ]);
  return fencingToken;
}

/** Expects a refusal; returns it. */
export function refusalOf(attempt: AcquireAttempt): Extract<AcquireAttempt, { acquired: false }> {
  expect(attempt).toMatchObject({ acquired: false });
  return attempt as Extract<AcquireAttempt, { acquired: false }>;
}

/**
 * Expects the `pttl` of a refusal by a holder that took the key for `ttl`: within (0, ttl] by a
 * TTL; -1 (unbounded) for a session's hold.
 */
export function expectPttl(can: LockStoreCapabilities, attempt: AcquireAttempt, ttl: number): void {
  const { pttl } = refusalOf(attempt);
  if (can.keepAlive === 'session') expect(pttl).toBe(-1);
  else expect([pttl, pttl > 0 && pttl <= ttl]).toEqual([pttl, true]);
}
