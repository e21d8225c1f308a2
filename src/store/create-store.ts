import type { Cluster, Redis } from 'ioredis';
import { messageOf } from '../lock.errors.js';
import type { RedisServerConfig, ResolvedLockOptions } from '../options/lock-options.interface.js';
import { addressOf, isRedisClient } from '../options/redis-topology.js';
import type { LockStore } from './lock-store.interface.js';
import { MemoryLockStore } from './memory/memory.store.js';
import { createClusterClient, createRedisClient } from './redis/redis-clients.js';
import { RedisLockStore } from './redis/redis.store.js';
import { RedlockLockStore } from './redlock/redlock.store.js';
import { ZooKeeperLockStore } from './zookeeper/zookeeper.store.js';

/**
 * The store for the configured topology: memory, ZooKeeper, one Redis (or Sentinel), Cluster or
 * RedLock.
 * @param warn receives the connection problems that no caller is waiting for
 */
export function createStore(
  options: ResolvedLockOptions,
  warn: (message: string) => void,
): LockStore {
  if (options.store === 'memory') {
    return new MemoryLockStore(options.fair, options.memorySpace?.state);
  }
  if (options.zookeeper) {
    return new ZooKeeperLockStore({
      ...options.zookeeper,
      commandTimeout: options.commandTimeout,
    });
  }
  const { redis } = options;
  const storeOn = (client: Redis | Cluster, ownsClient: boolean, where = '') =>
    new RedisLockStore({
      client,
      ownsClient,
      fair: options.fair,
      commandTimeout: redis.topology === 'redlock' ? options.nodeTimeout : options.commandTimeout,
      waitForReplicas: options.waitForReplicas,
      onError: (message, error) => warn(`${message}${where}: ${messageOf(error)}`),
    });
  const serverStore = (config: RedisServerConfig, where?: string) =>
    isRedisClient(config)
      ? storeOn(config, false, where)
      : storeOn(createRedisClient(config), true, where);
  switch (redis.topology) {
    case 'single':
      return serverStore(redis.config);
    case 'cluster':
      return isRedisClient(redis.config)
        ? storeOn(redis.config, false)
        : storeOn(createClusterClient(redis.config), true);
    case 'redlock':
      return new RedlockLockStore(
        redis.nodes.map((config) => {
          const name = addressOf(config);
          return { name, store: serverStore(config, ` (${name})`) };
        }),
        options.driftFactor,
      );
  }
}
