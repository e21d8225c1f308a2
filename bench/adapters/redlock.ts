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
    make: (clients: Redis[], options: object) => new Redlock(clients, options),
  },
  'sesame-redlock': {
    pkg: '@sesamecare-oss/redlock',
    make: (clients: Redis[], options: object) => new SesameRedlock(clients, options),
  },
} satisfies Record<string, { pkg: string; make(clients: Redis[], options: object): RedlockLike }>;

type Flavour = keyof typeof FLAVOURS;

/**
 * `redlock` 5, or its maintained fork `@sesamecare-oss/redlock`, with one Redis client as their
 * READMEs set it up, or with one client per independent master (the RedLock algorithm, which
 * is what these packages are for). Their only way to wait is to retry; the retry count is
 * raised so that they keep trying for about `CONFIG.waitMs`, and the delay and jitter stay at
 * their defaults.
 */
export class RedlockAdapter implements LockAdapter<RedlockLock> {
  readonly waiting: string;

  private constructor(
    readonly id: string,
    readonly name: string,
    readonly counter: CommandCounter,
    private readonly clients: Redis[],
    private readonly redlock: RedlockLike,
  ) {
    const { retryCount, retryDelay, retryJitter } = redlock.settings;
    this.waiting = `polls: retryCount ${retryCount}, retryDelay ${retryDelay} ± ${retryJitter} ms`;
  }

  /**
   * With one client on `url`, or one per master in `url` (an array), then under the id `id`.
   */
  static async create(
    flavour: Flavour,
    url: string | readonly string[],
    id: string = flavour,
  ): Promise<RedlockAdapter> {
    const { pkg, make } = FLAVOURS[flavour];
    const counter = new CommandCounter();
    const urls = typeof url === 'string' ? [url] : url;
    const clients = await Promise.all(urls.map((u) => countedClient(u, counter)));
    const redlock = make(clients, { retryCount: Math.ceil(CONFIG.waitMs / RETRY_DELAY) });
    // Every failed attempt ("resource locked") is emitted as an 'error' event; an EventEmitter
    // without an 'error' listener would throw it.
    redlock.on('error', () => undefined);
    const name = `${pkg} ${await versionOf(pkg)}`;
    return new RedlockAdapter(
      id,
      typeof url === 'string' ? name : `${name}, ${urls.length} clients`,
      counter,
      clients,
      redlock,
    );
  }

  acquire(key: string, ttl: number): Promise<RedlockLock> {
    return this.redlock.acquire([`bench:${this.id}:${key}`], ttl);
  }

  async release(lock: RedlockLock): Promise<void> {
    await lock.release();
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => closeClient(client)));
  }
}
