import type { LockModuleOptions } from '../../src/index.js';
import { processSpace } from '../../src/store/memory/memory-space.js';
import { rawClient, sharedRedisUrl } from './lock-app.js';

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
    close: async () => undefined,
  };
}

/** For `describe.each`: every store the library has, so that they cannot drift apart. */
export const backends: [string, () => Backend][] = [
  ['redis', redisBackend],
  ['memory', memoryBackend],
];
