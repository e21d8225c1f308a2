import { ConfigurableModuleBuilder, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { LockOptionsFactory } from './options/lock-options-factory.interface.js';
import type { LockModuleOptions } from './options/lock-options.interface.js';
import { checkBoolean } from './options/option-checks.js';
import { LockExceptionFilter } from './transports/lock-exception.filter.js';

// The name Nest calls on a `useClass` / `useExisting` options factory, after Nest's own
// `create<Feature>Options` habit; the exported LockOptionsFactory interface spells it out.
const FACTORY_METHOD = 'createLockOptions' satisfies keyof LockOptionsFactory;

/**
 * Options that shape the module itself rather than its locks, so they are read where the module
 * is defined (beside `useFactory` in `forRootAsync`), before any options factory runs.
 */
interface ModuleExtras {
  /** Register the module globally. */
  isGlobal?: boolean;
  /** Register `LockExceptionFilter` for the whole app (`APP_FILTER`); default `true`. */
  exceptionFilter?: boolean;
}

function applyExtras(definition: DynamicModule, extras: ModuleExtras): DynamicModule {
  const exceptionFilter = checkBoolean('exceptionFilter', extras.exceptionFilter ?? true);
  return {
    ...definition,
    global: extras.isGlobal,
    providers: exceptionFilter
      ? [...(definition.providers ?? []), { provide: APP_FILTER, useClass: LockExceptionFilter }]
      : definition.providers,
  };
}

export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } =
  new ConfigurableModuleBuilder<LockModuleOptions>({ moduleName: 'Lock' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName(FACTORY_METHOD)
    .setExtras<ModuleExtras>({ isGlobal: false, exceptionFilter: true }, applyExtras)
    .build();
