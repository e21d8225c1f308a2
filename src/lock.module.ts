import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LeaderElections } from './leader/leader-elections.js';
import { LeaderExplorer } from './leader/leader.explorer.js';
import { LeaderService } from './leader/leader.service.js';
import { LockExplorer } from './lock.explorer.js';
import { LockLifecycle } from './lock.lifecycle.js';
import { LockEngine } from './engine/lock-engine.js';
import { LOCK_ENGINE, LOCK_OPTIONS, LOCK_STORE } from './lock.constants.js';
import {
  ASYNC_OPTIONS_TYPE,
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN,
  OPTIONS_TYPE,
} from './lock.module-definition.js';
import type { LockModuleOptions, ResolvedLockOptions } from './options/lock-options.interface.js';
import { resolveModuleOptions } from './options/resolve-module-options.js';
import { LockService } from './lock.service.js';
import { LockHealthIndicator } from './lock-health.indicator.js';
import { createStore } from './store/create-store.js';
import { describeStore } from './store/describe-store.js';
import type { LockStore } from './store/lock-store.interface.js';
import { createTelemetry } from './telemetry/load-telemetry.js';

const providers: Provider[] = [
  {
    provide: LOCK_OPTIONS,
    useFactory: (options: LockModuleOptions) => resolveModuleOptions(options),
    inject: [MODULE_OPTIONS_TOKEN],
  },
  {
    provide: LOCK_STORE,
    useFactory: (options: ResolvedLockOptions) => {
      const logger = new Logger(LockModule.name);
      const store = createStore(
        options,
        (message) => logger.warn(message),
        (message) => logger.log(message),
      );
      logger.log(describeStore(options));
      return store;
    },
    inject: [LOCK_OPTIONS],
  },
  {
    provide: LOCK_ENGINE,
    useFactory: (options: ResolvedLockOptions, store: LockStore) => {
      const logger = new Logger(LockService.name);
      const warn = (message: string) => logger.warn(message);
      return new LockEngine(options, store, warn, createTelemetry(options, warn));
    },
    inject: [LOCK_OPTIONS, LOCK_STORE],
  },
  LockService,
  LockHealthIndicator,
  LockLifecycle,
  LockExplorer,
  LeaderElections,
  LeaderService,
  LeaderExplorer,
];

/**
 * Distributed locks on Redis, ZooKeeper or, within one process, in memory.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [LockModule.forRoot({ redis: process.env.REDIS_URL, ttl: 10_000 })],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers,
  exports: [LockService, LeaderService, LockHealthIndicator],
})
export class LockModule extends ConfigurableModuleClass {
  /** Configures the module with options known up front. */
  static override forRoot(options: typeof OPTIONS_TYPE = {}): DynamicModule {
    return { ...super.forRoot(options), global: options.isGlobal };
  }

  /**
   * Configures the module from a factory, a class or an existing provider; a class (`useClass`,
   * `useExisting`) implements `LockOptionsFactory`.
   */
  static override forRootAsync(options: typeof ASYNC_OPTIONS_TYPE): DynamicModule {
    return { ...super.forRootAsync(options), global: options.isGlobal };
  }
}
