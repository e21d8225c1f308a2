import { randomUUID } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockModule, LockService, type Lock, type LockModuleOptions } from '../../src/index.js';

/** The Redis that the global setup started for this run. */
export function sharedRedisUrl(): string {
  const url = process.env.LOCK_TEST_REDIS_URL;
  if (!url) throw new Error('LOCK_TEST_REDIS_URL is unset: run the tests with `npm test`');
  return url;
}

/** A key prefix no other test uses, so that files can share one Redis. */
export function uniquePrefix(): string {
  return `test:${randomUUID().slice(0, 8)}:`;
}

export interface LockApp {
  module: TestingModule;
  locks: LockService;
  close(): Promise<void>;
}

/**
 * Boots a Nest module that imports `LockModule.forRoot(options)`. Unless the options say
 * otherwise, its shutdown ends the locks still held at once (`shutdownGrace: 0`): many tests
 * close an app with locks they left held, and the specs of shutdown set a grace of their own.
 */
export async function bootLockApp(options: LockModuleOptions): Promise<LockApp> {
  const module = await Test.createTestingModule({
    imports: [LockModule.forRoot({ shutdownGrace: 0, ...options })],
  }).compile();
  await module.init();
  return { module, locks: module.get(LockService), close: () => module.close() };
}

/** A plain client for looking behind the library's back; call `quit()` when done. */
export function rawClient(url: string): Redis {
  return new Redis(url);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves with the reason once the lock's signal is aborted. */
export const aborted = (lock: Lock) =>
  new Promise<unknown>((resolve) => {
    if (lock.signal.aborted) resolve(lock.signal.reason);
    lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true });
  });

/** How many times a Redis has run the given commands so far (`INFO commandstats`). */
export async function commandCalls(redis: Redis, ...names: string[]): Promise<number> {
  const info = await redis.info('commandstats');
  return names.reduce(
    (sum, name) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0),
    0,
  );
}

/** How many scripts a Redis has run so far (EVALSHA, and EVAL for a script's first call). */
export function scriptCalls(redis: Redis): Promise<number> {
  return commandCalls(redis, 'evalsha', 'eval');
}
