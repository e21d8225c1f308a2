import type { Redis } from 'ioredis';
import Redlock, { type Lock } from 'redlock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/** redlock's defaults (as shipped in 5.0.0-beta.2): a retry every 200 ms ± 100 ms. */
const RETRY_DELAY = 200;

/**
 * `redlock` 5 with one Redis client, as its README sets it up. Its only way to wait is to
 * retry; the retry count is raised so that it keeps trying for about `CONFIG.waitMs`, and the
 * delay and jitter stay at their defaults.
 */
export class RedlockAdapter implements LockAdapter<Lock> {
  readonly id = 'redlock';
  readonly waiting: string;

  private constructor(
    readonly name: string,
    readonly counter: CommandCounter,
    private readonly client: Redis,
    private readonly redlock: Redlock,
  ) {
    const { retryCount, retryDelay, retryJitter } = redlock.settings;
    this.waiting = `polls: retryCount ${retryCount}, retryDelay ${retryDelay} ± ${retryJitter} ms`;
  }

  static async create(url: string): Promise<RedlockAdapter> {
    const counter = new CommandCounter();
    const client = await countedClient(url, counter);
    const redlock = new Redlock([client], { retryCount: Math.ceil(CONFIG.waitMs / RETRY_DELAY) });
    // redlock emits every failed attempt ("resource locked") as an 'error' event; an
    // EventEmitter without an 'error' listener would throw it.
    redlock.on('error', () => undefined);
    return new RedlockAdapter(`redlock ${await versionOf('redlock')}`, counter, client, redlock);
  }

  acquire(key: string, ttl: number): Promise<Lock> {
    return this.redlock.acquire([`bench:redlock:${key}`], ttl);
  }

  async release(lock: Lock): Promise<void> {
    await lock.release();
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }
}
