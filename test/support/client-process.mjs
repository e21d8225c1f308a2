/**
 * A separate process that boots the module on LOCK_REDIS_URL through the client library
 * LOCK_REDIS_CLIENT, runs one `using` call, and reports `{ fencingToken }` or
 * `{ error: 'Name: message' }`, then exits; with `hide-packages.mjs` preloaded, it plays an app
 * that installed one client library and not the others.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

const env = process.env;

class ClientModule {}
Module({
  imports: [
    LockModule.forRoot({
      redis: env.LOCK_REDIS_URL,
      redisClient: /** @type {'ioredis' | 'glide'} */ (env.LOCK_REDIS_CLIENT),
      keyPrefix: env.LOCK_KEY_PREFIX,
    }),
  ],
})(ClientModule);

// The parent went away: nothing else will ever stop us.
process.on('disconnect', () => process.exit(0));

try {
  const app = await NestFactory.createApplicationContext(ClientModule, {
    logger: false,
    abortOnError: false,
  });
  try {
    const fencingToken = await app.get(LockService).using('k', (lock) => lock.fencingToken);
    process.send?.({ fencingToken });
  } finally {
    await app.close();
  }
} catch (error) {
  process.send?.({
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
}
process.disconnect?.();
