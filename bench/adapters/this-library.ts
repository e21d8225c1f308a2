import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.apps.json).
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
 * `LockModule.forRoot`, and `LockService` taken from it. It gets ioredis clients of its own
 * (passed in, so that their commands can be counted; the module duplicates each for its pub/sub
 * subscriber). The module's defaults are kept (watchdog on; with RedLock, fair queueing off and
 * the default nodeTimeout); ttl and wait are per call.
 */
export class ThisLibraryAdapter implements LockAdapter<Lock> {
  private constructor(
    readonly id: string,
    readonly name: string,
    readonly waiting: string,
    readonly counter: CommandCounter,
    private readonly app: INestApplicationContext,
    private readonly clients: Redis[],
    readonly locks: LockService,
    readonly decorated: DecoratedService,
  ) {}

  /**
   * On one Redis (`url` a string), or as a RedLock over the independent masters `url` lists
   * (3 or more, which is what makes the module use RedLock), then under the id `id`; with
   * `waitForReplicas` (one Redis only) as given, else without, the module's default.
   */
  static async create(
    url: string | readonly string[],
    id = 'nestjs-redis-lock',
    waitForReplicas?: { replicas: number; timeout: number },
  ): Promise<ThisLibraryAdapter> {
    const counter = new CommandCounter();
    const urls = typeof url === 'string' ? [url] : url;
    const clients = await Promise.all(urls.map((u) => countedClient(u, counter)));
    const redlock = typeof url !== 'string';
    const app = await NestFactory.createApplicationContext(
      {
        module: BenchAppModule,
        imports: [
          LockModule.forRoot({
            redis: redlock ? clients : clients[0],
            keyPrefix: LIBRARY_PREFIX,
            ttl: CONFIG.ttl,
            waitTimeout: CONFIG.waitMs,
            waitForReplicas,
          }),
        ],
        providers: [DecoratedService],
      },
      { logger: ['error', 'warn'] },
    );
    const version = await versionOf('nestjs-redis-lock');
    return new ThisLibraryAdapter(
      id,
      redlock
        ? `nestjs-redis-lock ${version}, RedLock on ${urls.length} masters`
        : waitForReplicas
          ? `nestjs-redis-lock ${version}, waitForReplicas ${waitForReplicas.replicas} within ${waitForReplicas.timeout} ms`
          : `nestjs-redis-lock ${version}`,
      redlock
        ? 'woken by the release message of any master (RedLock: not fair, the default there)'
        : 'woken by release message (library default)',
      counter,
      app,
      clients,
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
    // Clients passed in are not closed by the module.
    await Promise.all(this.clients.map((client) => closeClient(client)));
  }
}
