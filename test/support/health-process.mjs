/**
 * A separate process that boots an app with the memory store and no `@nestjs/terminus` (run
 * with hide-terminus.mjs preloaded), and reports whether terminus could be loaded and what the
 * lock health indicator answers: `{ terminus: 'hidden', health }`, or `{ error }` when the boot
 * failed.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockHealthIndicator, LockModule } from 'nestjs-redis-lock';

class AppModule {}
Module({ imports: [LockModule.forRoot({ store: 'memory' })] })(AppModule);

try {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const terminus = await import('@nestjs/terminus').then(
    () => 'loaded',
    () => 'hidden',
  );
  const health = await app.get(LockHealthIndicator).isHealthy();
  await app.close();
  process.send?.({ terminus, health });
} catch (error) {
  process.send?.({
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
}
process.disconnect?.();
