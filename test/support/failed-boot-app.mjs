/**
 * A Nest application context whose boot fails, run as a child process by the failed-boot spec.
 * It boots with `LockModule` on FAILED_BOOT_REDIS_URL and fails the way its first argument says:
 *
 * - `placeholder`: a `@WithLock` template names no parameter (our own init hook fails);
 * - `provider`: another provider, created after the lock service, throws in its factory;
 * - `init`: another provider's `onModuleInit` throws;
 * - `bootstrap`: another provider's `onApplicationBootstrap` throws.
 *
 * It catches the boot error, prints its name and message on stdout, and does nothing more: from
 * then on nothing may keep it alive, so it must exit by itself.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest; decorators are applied by hand.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService, WithLock } from 'nestjs-redis-lock';

const failure = process.argv[2];

class Jobs {
  /** @param {string} id */
  run(id) {
    return id;
  }
}
const run = /** @type {PropertyDescriptor} */ (
  Object.getOwnPropertyDescriptor(Jobs.prototype, 'run')
);
WithLock(failure === 'placeholder' ? 'job:<jobId>' : 'job:<id>')(Jobs.prototype, 'run', run);
Object.defineProperty(Jobs.prototype, 'run', run);
Injectable()(Jobs);

class Failing {
  onModuleInit() {
    if (failure === 'init') throw new Error('an init hook failed');
  }

  onApplicationBootstrap() {
    if (failure === 'bootstrap') throw new Error('a bootstrap hook failed');
  }
}
Injectable()(Failing);

const broken = {
  provide: 'broken',
  /** @param {LockService} _locks */
  useFactory: (_locks) => {
    throw new Error('a provider factory failed');
  },
  inject: [LockService],
};

class AppModule {}
Module({
  imports: [LockModule.forRoot({ redis: process.env.FAILED_BOOT_REDIS_URL })],
  providers: failure === 'provider' ? [Jobs, Failing, broken] : [Jobs, Failing],
})(AppModule);

try {
  await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
  console.log('booted');
} catch (error) {
  console.log(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
}
