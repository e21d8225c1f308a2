import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import { LockExceptionFilter } from './lock-exception.filter.js';
import { LockExplorer } from './lock.explorer.js';
import { LockEngine } from './engine/lock-engine.js';
import { LOCK_ENGINE, LOCK_OPTIONS, LOCK_STORE } from './lock.constants.js';
import { messageOf } from './lock.errors.js';
import {
  ASYNC_OPTIONS_TYPE,
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN,
  OPTIONS_TYPE,
} from './lock.module-definition.js';
import type {
  LockModuleOptions,
  RedisServerConfig,
  ResolvedLockOptions,
} from './options/lock-options.interface.js';
import { addressOf, isRedisClient } from './options/redis-topology.js';
import { resolveModuleOptions } from './options/resolve-module-options.js';
import { LockService } from './lock.service.js';
import type { LockStore } from './store/lock-store.interface.js';
import { MemoryLockStore } from './store/memory/memory.store.js';
import { createClusterClient, createRedisClient, RedisLockStore } from './store/redis/redis.store.js';
import { RedlockLockStore } from './store/redlock/redlock.store.js';

/** The store for the configured topology: memory, one Redis (or Sentinel), Cluster or RedLock. */
function createStore(options: ResolvedLockOptions): LockStore {
  if (options.store === 'memory') return new MemoryLockStore(options.fair);
  const logger = new Logger(LockModule.name);
  const { redis } = options;
  const storeOn = (client: Redis | Cluster, ownsClient: boolean, where = '') =>
    new RedisLockStore({
      client,
      ownsClient,
      fair: options.fair,
      commandTimeout: redis.topology === 'redlock' ? options.nodeTimeout : options.commandTimeout,
      waitForReplicas: options.waitForReplicas,
      onError: (message, error) => logger.warn(`${message}${where}: ${messageOf(error)}`),
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

const providers: Provider[] = [
  {
    provide: LOCK_OPTIONS,
    useFactory: (options: LockModuleOptions) => resolveModuleOptions(options),
    inject: [MODULE_OPTIONS_TOKEN],
  },
  {
    provide: LOCK_STORE,
    useFactory: createStore,
    inject: [LOCK_OPTIONS],
  },
  {
    provide: LOCK_ENGINE,
    useFactory: (options: ResolvedLockOptions, store: LockStore) => {
      const logger = new Logger(LockService.name);
      return new LockEngine(options, store, (message) => logger.warn(message));
    },
    inject: [LOCK_OPTIONS, LOCK_STORE],
  },
  LockService,
  LockExplorer,
  { provide: APP_FILTER, useClass: LockExceptionFilter },
];

/**
 * Distributed locks on Redis.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [LockModule.forRoot({ redis: process.env.REDIS_URL, ttl: 10_000 })],
 * })
 * export class AppModule {}
 * ```
 */
@Module({ imports: [DiscoveryModule], providers, exports: [LockService] })
export class LockModule extends ConfigurableModuleClass {
  /** Configures the module with options known up front. */
  static override forRoot(options: typeof OPTIONS_TYPE = {}): DynamicModule {
    return { ...super.forRoot(options), global: options.isGlobal };
  }

  /** Configures the module from a factory, a class or an existing provider. */
  static override forRootAsync(options: typeof ASYNC_OPTIONS_TYPE): DynamicModule {
    return { ...super.forRootAsync(options), global: options.isGlobal };
  }
}
