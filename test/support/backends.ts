import type { LockModuleOptions } from '../../src/index.js';
import { sideKeyOf } from '../../src/store/redis/redis-keys.js';
import { processSpace } from '../../src/store/memory/memory-space.js';
import { bootLockApp, rawClient, sharedRedisUrl, sleep, type LockApp } from './lock-app.js';

/**
 * A lock store as a test sees it: the module options that select it, and a look behind the
 * library's back at what the store holds (raw Redis commands, or the memory store's maps).
 */
export interface Backend {
  readonly name: 'redis' | 'memory';
  options(extra?: LockModuleOptions): LockModuleOptions;
  get(key: string): Promise<string | null>;
  /** Remaining ms; -2 when the key does not exist. */
  pttl(key: string): Promise<number>;
  exists(...keys: string[]): Promise<number>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  del(key: string): Promise<void>;
  /** A value written through the fencing guard. */
  readFenced(resource: string): Promise<string | null>;
  /** How many callers queue for a semaphore or read-write lock on full key `key`. */
  lineLength(key: string): Promise<number>;
  /** How many holders a semaphore or read-write lock on full key `key` has (expired ones too). */
  holderCount(key: string): Promise<number>;
  close(): Promise<void>;
}

function redisBackend(): Backend {
  const redis = rawClient(sharedRedisUrl());
  return {
    name: 'redis',
    options: (extra) => ({ redis: sharedRedisUrl(), ...extra }),
    get: (key) => redis.get(key),
    pttl: (key) => redis.pttl(key),
    exists: (...keys) => redis.exists(...keys),
    set: async (key, value, ttlMs) => {
      await (ttlMs === undefined ? redis.set(key, value) : redis.set(key, value, 'PX', ttlMs));
    },
    del: async (key) => {
      await redis.del(key);
    },
    readFenced: (resource) => redis.get(resource),
    lineLength: (key) => redis.zcard(sideKeyOf(key, 'line')),
    holderCount: (key) => redis.zcard(sideKeyOf(key, 'holders')),
    close: async () => {
      await redis.quit();
    },
  };
}

function memoryBackend(): Backend {
  const { locks } = processSpace;
  const live = (key: string) => processSpace.live(locks, key);
  return {
    name: 'memory',
    options: (extra) => ({ store: 'memory', ...extra }),
    get: async (key) => live(key)?.value ?? null,
    pttl: async (key) => {
      const entry = live(key);
      if (!entry) return -2;
      return entry.expiresAt === Infinity ? -1 : Math.ceil(entry.expiresAt - performance.now());
    },
    exists: async (...keys) => keys.filter((key) => live(key)).length,
    set: async (key, value, ttlMs) => {
      locks.set(key, { value, expiresAt: performance.now() + (ttlMs ?? Infinity) });
    },
    del: async (key) => {
      locks.delete(key);
    },
    readFenced: async (resource) => processSpace.live(processSpace.values, resource)?.value ?? null,
    lineLength: async (key) => processSpace.lines.get(key)?.size ?? 0,
    holderCount: async (key) => processSpace.holders.get(key)?.size ?? 0,
    close: async () => undefined,
  };
}

/** For `describe.each`: every store the library has, so that they cannot drift apart. */
export const backends: [string, () => Backend][] = [
  ['redis', redisBackend],
  ['memory', memoryBackend],
];

/** What {@link withLockApps} sets up for a describe block. */
export interface LockApps {
  apps: LockApp[];
  store: Backend;
}

/**
 * Boots `count` LockService instances (each its own module and connections) on the store that
 * `makeBackend` gives, before the describe block's tests, and closes them after.
 */
export function withLockApps(
  count: number,
  makeBackend: () => Backend,
  extra: LockModuleOptions,
): LockApps {
  const context = { apps: [] as LockApp[] } as LockApps;
  beforeAll(async () => {
    context.store = makeBackend();
    for (let i = 0; i < count; i++) {
      context.apps.push(await bootLockApp(context.store.options(extra)));
    }
  });
  afterAll(async () => {
    await Promise.all(context.apps.map((app) => app.close()));
    await context.store.close();
  });
  return context;
}

/**
 * Waits until `check` holds, looking every few ms (for state a test cannot await); with
 * `timeoutMs`, throws once that has passed, so that a failing test ends instead of looking on
 * after it has timed out and keeping Jest from exiting.
 */
export async function until(check: () => Promise<boolean>, timeoutMs = Infinity): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline)
      throw new Error(`not so after ${timeoutMs} ms: ${String(check)}`);
    await sleep(5);
  }
}
