import type { Redis } from 'ioredis';
import { defaultTimeoutOptions, Mutex } from 'redis-semaphore';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/**
 * `redis-semaphore`'s `Mutex`, one instance per acquisition as its README shows, with its
 * defaults: it retries every `retryInterval` (10 ms) until `acquireTimeout`, and refreshes a
 * held lock on a timer of its own (at 80 % of `lockTimeout`, which no workload reaches).
 */
export class RedisSemaphoreAdapter implements LockAdapter<Mutex> {
  readonly id = 'redis-semaphore';
  readonly waiting = `polls every ${defaultTimeoutOptions.retryInterval} ms (default retryInterval)`;

  private constructor(
    readonly name: string,
    readonly counter: CommandCounter,
    private readonly client: Redis,
  ) {}

  static async create(url: string): Promise<RedisSemaphoreAdapter> {
    const counter = new CommandCounter();
    const client = await countedClient(url, counter);
    const version = await versionOf('redis-semaphore');
    return new RedisSemaphoreAdapter(`redis-semaphore ${version} Mutex`, counter, client);
  }

  async acquire(key: string, ttl: number, waitMs: number): Promise<Mutex> {
    const mutex = new Mutex(this.client, `bench:sem:${key}`, {
      lockTimeout: ttl,
      acquireTimeout: waitMs,
    });
    await mutex.acquire();
    return mutex;
  }

  release(mutex: Mutex): Promise<void> {
    return mutex.release();
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }
}
