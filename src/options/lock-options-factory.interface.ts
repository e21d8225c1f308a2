import type { LockModuleOptions } from './lock-options.interface.js';

/**
 * What a class given to `LockModule.forRootAsync({ useClass })` or `{ useExisting }`
 * implements: Nest instantiates it with its own dependencies (or, with `useExisting`, takes the
 * provider the imported modules give) and calls `createLockOptions()` once, when the module is
 * created. The options it returns are validated as `forRoot`'s are.
 *
 * @example
 * ```ts
 * @Injectable()
 * class LockConfig implements LockOptionsFactory {
 *   constructor(private readonly config: ConfigService) {}
 *
 *   createLockOptions(): LockModuleOptions {
 *     return { redis: this.config.getOrThrow('REDIS_URL'), ttl: 10_000 };
 *   }
 * }
 *
 * LockModule.forRootAsync({ imports: [ConfigModule], useClass: LockConfig });
 * ```
 */
export interface LockOptionsFactory {
  createLockOptions(): LockModuleOptions | Promise<LockModuleOptions>;
}
