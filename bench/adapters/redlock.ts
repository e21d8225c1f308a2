import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import Redlock from 'redlock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/** Both packages keep redlock 5's defaults: a retry every 200 ms ± 100 ms. */
const RETRY_DELAY = 200;

/** What the adapter uses of a redlock 5 instance; `redlock` and its fork share this API. */
interface RedlockLike {
  readonly settings: { retryCount: number; retryDelay: number; retryJitter: number };
  acquire(resources: string[], ttl: number): Promise<{ release(): Promise<unknown> }>;
  on(event: 'error', listener: () => void): unknown;
}

type RedlockLock = Awaited<ReturnType<RedlockLike['acquire']>>;

/** The two redlock 5 packages a user would pick. */
const FLAVOURS = {
  redlock: {
    pkg: 'redlock',
    make: (client: Redis, options: object) => new Redlock([client], options),
  },
  'sesame-redlock': {
    pkg: '@sesamecare-oss/redlock',
    make: (client: Redis, options: object) => new SesameRedlock([client], options),
  },
} satisfies Record<string, { pkg: string; make(client: Redis, options: object): RedlockLike }>;

/**
 * `redlock` 5, or its maintained fork `@sesamecare-oss/redlock`, with one Redis client as their
 * READMEs set it up. Their only way to wait is to retry; the retry count is raised so that they
 * keep trying for about `CONFIG.waitMs`, and the delay and jitter stay at their defaults.
 */
export class RedlockAdapter implements LockAdapter<RedlockLock> {
  readonly waiting: string;

  private constructor(
    readonly id: keyof typeof FLAVOURS,
    readonly name: string,
    readonly counter: CommandCounter,
    private readonly client: Redis,
    private readonly redlock: RedlockLike,
  ) {
    const { retryCount, retryDelay, retryJitter } = redlock.settings;
    this.waiting = `polls: retryCount ${retryCount}, retryDelay ${retryDelay} ± ${retryJitter} ms`;
  }

  static async create(id: keyof typeof FLAVOURS, url: string): Promise<RedlockAdapter> {
    const { pkg, make } = FLAVOURS[id];
    const counter = new CommandCounter();
    const client = await countedClient(url, counter);
    const redlock = make(client, { retryCount: Math.ceil(CONFIG.waitMs / RETRY_DELAY) });
    // Every failed attempt ("resource locked") is emitted as an 'error' event; an EventEmitter
    // without an 'error' listener would throw it.
    redlock.on('error', () => undefined);
    return new RedlockAdapter(id, `${pkg} ${await versionOf(pkg)}`, counter, client, redlock);
  }

  acquire(key: string, ttl: number): Promise<RedlockLock> {
    return this.redlock.acquire([`bench:${this.id}:${key}`], ttl);
  }

  async release(lock: RedlockLock): Promise<void> {
    await lock.release();
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }
}
