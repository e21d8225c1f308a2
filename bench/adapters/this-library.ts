import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.bench.json).
import { LockModule, LockService, WithLock, type Lock } from 'nestjs-redis-lock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/** Key prefix of this library's locks in the benchmark's Redis. */
export const LIBRARY_PREFIX = 'bench:nrl:';

/** The work of workload 7, identical for the decorated method and the `using` call. */
export function decoratorWork(id: string): number {
  return id.length;
}

/** A provider with a decorated method, for workload 7 (decorator versus `using`). */
@Injectable()
export class DecoratedService {
  @WithLock('dec:<id>')
  async run(id: string): Promise<number> {
    return decoratorWork(id);
  }
}

@Module({})
class BenchAppModule {}

/**
 * This library as an application uses it: a Nest application context with
 * `LockModule.forRoot`, and `LockService` taken from it. It gets an ioredis client of its own
 * (passed in, so that its commands can be counted; the module duplicates it for its pub/sub
 * subscriber). The module's defaults are kept (watchdog on); ttl and wait are per call.
 */
export class ThisLibraryAdapter implements LockAdapter<Lock> {
  readonly id = 'nestjs-redis-lock';
  readonly waiting = 'woken by release message (library default)';

  private constructor(
    readonly name: string,
    readonly counter: CommandCounter,
    private readonly app: INestApplicationContext,
    private readonly client: Redis,
    readonly locks: LockService,
    readonly decorated: DecoratedService,
  ) {}

  static async create(url: string): Promise<ThisLibraryAdapter> {
    const counter = new CommandCounter();
    const client = await countedClient(url, counter);
    const app = await NestFactory.createApplicationContext(
      {
        module: BenchAppModule,
        imports: [
          LockModule.forRoot({
            redis: client,
            keyPrefix: LIBRARY_PREFIX,
            ttl: CONFIG.ttl,
            waitTimeout: CONFIG.waitMs,
          }),
        ],
        providers: [DecoratedService],
      },
      { logger: ['error', 'warn'] },
    );
    return new ThisLibraryAdapter(
      `nestjs-redis-lock ${await versionOf('nestjs-redis-lock')}`,
      counter,
      app,
      client,
      app.get(LockService),
      app.get(DecoratedService),
    );
  }

  acquire(key: string, ttl: number, waitMs: number): Promise<Lock> {
    return this.locks.acquire(key, { ttl, waitTimeout: waitMs });
  }

  async release(lock: Lock): Promise<void> {
    if (!(await lock.release())) throw new Error(`lock ${lock.key} was no longer held at release`);
  }

  async close(): Promise<void> {
    await this.app.close();
    // A client passed in is not closed by the module.
    await closeClient(this.client);
  }
}
