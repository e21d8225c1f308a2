import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { Redis as IoValkey } from 'iovalkey';
import { createClient } from 'redis';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.apps.json).
import {
  LockModule,
  LockService,
  WithLock,
  type Lock,
  type LockModuleOptions,
} from 'nestjs-redis-lock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/** Key prefix of this library's locks in the benchmark's Redis. */
export const LIBRARY_PREFIX = 'bench:nrl:';

/**
 * The Redis client libraries this library runs on, as the benchmark compares them (one Redis):
 * the module gets a client of the library (GLIDE: a URL with `redisClient: 'glide'`, as the
 * module's own GLIDE clients are not counted).
 */
export const CLIENT_LIBRARIES = ['ioredis', 'iovalkey', 'node-redis', 'glide'] as const;
export type ClientLibrary = (typeof CLIENT_LIBRARIES)[number];

/** The benchmark's id of this library on `client`: ioredis keeps the plain id. */
export function libraryIdOn(client: ClientLibrary): string {
  return client === 'ioredis' ? 'nestjs-redis-lock' : `nestjs-redis-lock on ${client}`;
}

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
    /** Closes the clients passed in, which the module does not close. */
    private readonly closeClients: () => Promise<void>,
    readonly locks: LockService,
    readonly decorated: DecoratedService,
  ) {}

  /**
   * On one Redis (`url` a string), or as a RedLock over the independent masters `url` lists
   * (3 or more, which is what makes the module use RedLock), then under the id `id`; with
   * `waitForReplicas` (one Redis only) as given, else without, the module's default; on the
   * client library `client` (one Redis only; commands are counted on ioredis only).
   */
  static async create(
    url: string | readonly string[],
    id = 'nestjs-redis-lock',
    waitForReplicas?: { replicas: number; timeout: number },
    client: ClientLibrary = 'ioredis',
  ): Promise<ThisLibraryAdapter> {
    const counter = new CommandCounter();
    const urls = typeof url === 'string' ? [url] : url;
    const redlock = typeof url !== 'string';
    const clients =
      client === 'ioredis' ? await Promise.all(urls.map((u) => countedClient(u, counter))) : [];
    // iovalkey is a fork of ioredis with the same API, which the module takes as ioredis's.
    const iovalkey =
      client === 'iovalkey' ? (new IoValkey(urls[0]) as unknown as Redis) : undefined;
    // The module wants a node-redis client passed in connected.
    const nodeRedis =
      client === 'node-redis' ? await createClient({ url: urls[0] }).connect() : undefined;
    const redis: LockModuleOptions =
      client === 'glide'
        ? { redis: urls[0], redisClient: 'glide' }
        : { redis: redlock ? clients : (iovalkey ?? nodeRedis ?? clients[0]) };
    const app = await NestFactory.createApplicationContext(
      {
        module: BenchAppModule,
        imports: [
          LockModule.forRoot({
            ...redis,
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
          : client === 'ioredis'
            ? `nestjs-redis-lock ${version}`
            : `nestjs-redis-lock ${version} on ${client}`,
      redlock
        ? 'woken by the release message of any master (RedLock: not fair, the default there)'
        : 'woken by release message (library default)',
      counter,
      app,
      async () => {
        await Promise.all([
          ...[...clients, ...(iovalkey ? [iovalkey] : [])].map((c) => closeClient(c)),
          nodeRedis?.close(),
        ]);
      },
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
    await this.closeClients();
  }
}
