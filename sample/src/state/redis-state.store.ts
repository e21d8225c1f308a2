import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { StateStore } from './state-store.js';

/** Keeps the sample's data in Redis, under `keyPrefix`, so that every process shares it. */
export class RedisStateStore implements StateStore, OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(url: string, keyPrefix: string) {
    const logger = new Logger(RedisStateStore.name);
    let reported = false;
    this.redis = new Redis(url, { keyPrefix })
      .on('error', (error: Error) => {
        if (!reported) logger.warn(`Redis connection error (retrying): ${error.message}`);
        reported = true;
      })
      .on('ready', () => (reported = false));
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(key)) ?? undefined;
  }

  async set(key: string, value: string): Promise<void> {
    await this.redis.set(key, value);
  }

  increment(key: string, by: number): Promise<number> {
    return this.redis.incrby(key, by);
  }

  async append(key: string, value: string): Promise<void> {
    await this.redis.rpush(key, value);
  }

  list(key: string): Promise<string[]> {
    return this.redis.lrange(key, 0, -1);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
