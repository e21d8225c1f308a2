/**
 * A process that does nothing but wait for one lock, for tests that kill a waiter: it boots its
 * own Nest application context with `LockModule.forRoot` (its own Redis connections) and calls
 * `acquire`, then holds whatever it gets until it is killed.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because child
 * processes cannot run TypeScript through ts-jest. Configuration in the environment:
 * WAITER_REDIS_URL, WAITER_KEY_PREFIX, WAITER_KEY, WAITER_TTL, and optionally WAITER_LIMIT or
 * WAITER_MODE (a semaphore permit or a read-write share).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

const env = process.env;

class WaiterModule {}
Module({
  imports: [LockModule.forRoot({ redis: env.WAITER_REDIS_URL, keyPrefix: env.WAITER_KEY_PREFIX })],
})(WaiterModule);

// The parent went away: nothing else will ever stop us.
process.on('disconnect', () => process.exit(0));

const app = await NestFactory.createApplicationContext(WaiterModule, { logger: false });
process.send?.({ booted: true });
const lock = await app.get(LockService).acquire(env.WAITER_KEY ?? 'waiting', {
  ttl: Number(env.WAITER_TTL),
  waitTimeout: Infinity,
  ...(env.WAITER_LIMIT ? { limit: Number(env.WAITER_LIMIT) } : {}),
  ...(env.WAITER_MODE === 'read' || env.WAITER_MODE === 'write' ? { mode: env.WAITER_MODE } : {}),
});
process.send?.({ acquired: lock.fencingToken });
