/**
 * A separate process with a lock service of its own (its own ZooKeeper session), for tests that
 * crash a holder or boot without the ZooKeeper client package. What it does, by its argument:
 *
 * - `hold`: acquires ZK_KEY (waiting as long as it takes; a permit of a semaphore of ZK_LIMIT
 *   when that is set), reports `{ acquired: fencingToken }` and holds it until it is killed;
 * - `boot`: boots with `{ zookeeper: ZK_CONNECT }`, or with `{ redis: ZK_REDIS_URL }` when that
 *   is set, and reports `{ booted: true }` or `{ error: 'Name: message' }`, then exits.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

const env = process.env;
const backend = env.ZK_REDIS_URL
  ? { redis: env.ZK_REDIS_URL }
  : {
      zookeeper: {
        connectionString: env.ZK_CONNECT ?? '',
        sessionTimeout: Number(env.ZK_SESSION_TIMEOUT ?? 2_000),
        root: env.ZK_ROOT,
      },
    };

class HolderModule {}
Module({ imports: [LockModule.forRoot(backend)] })(HolderModule);

// The parent went away: nothing else will ever stop us.
process.on('disconnect', () => process.exit(0));

try {
  const app = await NestFactory.createApplicationContext(HolderModule, {
    logger: false,
    abortOnError: false,
  });
  if (process.argv[2] === 'boot') {
    process.send?.({ booted: true });
    await app.close();
    process.disconnect?.();
  } else {
    const lock = await app.get(LockService).acquire(env.ZK_KEY ?? 'held', {
      waitTimeout: Infinity,
      ...(env.ZK_LIMIT ? { limit: Number(env.ZK_LIMIT) } : {}),
    });
    process.send?.({ acquired: lock.fencingToken });
  }
} catch (error) {
  process.send?.({
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  process.disconnect?.();
}
