import { resolveMemorySpace } from './memory/memory.options.js';
import { resolveRedis, resolveRedisClient } from './redis/redis.options.js';
import { resolvePostgres } from './postgres/postgres.options.js';
import { resolveZooKeeper } from './zookeeper/zookeeper.options.js';
import { isOwnStore, resolveOwnStore } from './custom/custom-store.options.js';

/** The backends' option types that the module's options name. */
export type { MemoryLockSpace } from './memory/memory-space.js';
export type {
  PostgresOptions,
  PostgresPool,
  ResolvedPostgres,
} from './postgres/postgres.options.js';

/**
 * The module options of each backend, checked by the backend's own folder: the module's
 * resolver (src/options/resolve-module-options.ts) looks them up here and knows no backend
 * itself, as create-store.ts builds each backend's store. Checking options loads no backend's
 * package: each is loaded when its store first connects.
 */
export const BACKEND_OPTIONS = {
  /** `postgres`, and what the other options must be beside it. */
  postgres: { resolve: resolvePostgres },
  /** `zookeeper`, and what the other options must be beside it; with the module's ttl. */
  zookeeper: { resolve: resolveZooKeeper },
  /** A store of one's own given as `store` (a `LockStore`), and the options it refuses. */
  own: { isGiven: isOwnStore, resolve: resolveOwnStore },
  /** `redisClient`, then `redis` (its topology) against the library that connects. */
  redis: { resolveClient: resolveRedisClient, resolve: resolveRedis },
  /** `memorySpace`, with `store: 'memory'` only. */
  memory: { resolveSpace: resolveMemorySpace },
};
