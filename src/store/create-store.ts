import { ConnectionReport } from './connection-report.js';
import type {
  ResolvedLockOptions,
  ResolvedRedisOptions,
} from '../options/lock-options.interface.js';
import type { LockStore } from './lock-store.interface.js';
import { MemoryLockStore } from './memory/memory.store.js';
import { PostgresLockStore } from './postgres/postgres.store.js';
import type { RedisConnection } from './redis/redis-client.port.js';
import { clientLibraryOf, REDIS_CLIENTS } from './redis/redis-clients.js';
import { addressOf } from './redis/redis.options.js';
import { RedisLockStore } from './redis/redis.store.js';
import { RedlockLockStore } from './redlock/redlock.store.js';
import { ZooKeeperLockStore } from './zookeeper/zookeeper.store.js';

/**
 * The store for the configured topology: memory, ZooKeeper, PostgreSQL, one Redis (or Sentinel), Cluster or
 * RedLock.
 * @param warn receives the connection problems that no caller is waiting for
 */
export function createStore(
  options: ResolvedLockOptions,
  warn: (message: string) => void,
  log: (message: string) => void = warn,
): LockStore {
  switch (options.store) {
    case 'own':
      return options.own;
    case 'memory':
      return new MemoryLockStore(options.fair, options.memorySpace?.state, options.keyPrefix);
    case 'zookeeper':
      return new ZooKeeperLockStore({
        ...options.zookeeper,
        commandTimeout: options.commandTimeout,
        keyPrefix: options.keyPrefix,
        onError: warn,
      });
    case 'postgres':
      return new PostgresLockStore({
        postgres: options.postgres,
        keyPrefix: options.keyPrefix,
        fair: options.fair,
        commandTimeout: options.commandTimeout,
        owner: options.instanceId,
        onError: warn,
      });
    case 'redis':
      return createRedisStore(options, warn, log);
  }
}

/** One Redis (or Sentinel), a Cluster, or RedLock over independent masters. */
function createRedisStore(
  options: ResolvedRedisOptions,
  warn: (message: string) => void,
  log: (message: string) => void,
): LockStore {
  const { redis } = options;
  // A client passed in speaks through its own library; URLs and options through redisClient's.
  const libraryOf = (config: object | string) =>
    REDIS_CLIENTS[clientLibraryOf(config)?.kind ?? options.redisClient];
  const storeOn = ({ client, owned }: RedisConnection, where = '') =>
    new RedisLockStore({
      client,
      keyPrefix: options.keyPrefix,
      ownsClient: owned,
      fair: options.fair,
      commandTimeout: redis.topology === 'redlock' ? options.nodeTimeout : options.commandTimeout,
      waitForReplicas: options.waitForReplicas,
      report: new ConnectionReport('Redis', where, warn, log),
    });
  const { commandTimeout, nodeTimeout } = options;
  switch (redis.topology) {
    case 'single':
      return storeOn(libraryOf(redis.config).server(redis.config, commandTimeout));
    case 'cluster':
      return storeOn(libraryOf(redis.config).cluster(redis.config, commandTimeout));
    case 'redlock':
      return new RedlockLockStore(
        redis.nodes.map((config) => {
          const name = addressOf(config);
          const connection = libraryOf(config).server(config, nodeTimeout);
          return { name, store: storeOn(connection, ` (${name})`) };
        }),
        options.driftFactor,
        options.keyPrefix,
      );
  }
}
