import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import { LockExceptionFilter } from './lock-exception.filter.js';
import { LockExplorer } from './lock.explorer.js';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants.js';
import { messageOf } from './lock.errors.js';
import {
  ASYNC_OPTIONS_TYPE,
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN,
  OPTIONS_TYPE,
} from './lock.module-definition.js';
import {
  isRedisClient,
  resolveModuleOptions,
  type LockModuleOptions,
  type ResolvedLockOptions,
} from './lock.options.js';
import { LockService } from './lock.service.js';
import type { LockStore } from './store/lock-store.interface.js';
import { MemoryLockStore } from './store/memory.store.js';
import { createRedisClient, RedisLockStore } from './store/redis.store.js';

const providers: Provider[] = [
  {
    provide: LOCK_OPTIONS,
    useFactory: (options: LockModuleOptions) => resolveModuleOptions(options),
    inject: [MODULE_OPTIONS_TOKEN],
  },
  {
    provide: LOCK_STORE,
    useFactory: (options: ResolvedLockOptions): LockStore => {
      if (options.store === 'memory') return new MemoryLockStore(options.fair);
      const logger = new Logger(LockModule.name);
      const { redis } = options;
      const given = isRedisClient(redis);
      return new RedisLockStore({
        client: given ? redis : createRedisClient(redis),
        ownsClient: !given,
        fair: options.fair,
        commandTimeout: options.commandTimeout,
        onError: (message, error) => logger.warn(`${message}: ${messageOf(error)}`),
      });
    },
    inject: [LOCK_OPTIONS],
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
