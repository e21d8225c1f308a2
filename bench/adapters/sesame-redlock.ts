import type { Redis } from 'ioredis';
import { Redlock, type Lock } from '@sesamecare-oss/redlock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf, type LockAdapter } from './types.js';

/** The fork keeps redlock's defaults: a retry every 200 ms ± 100 ms. */
const RETRY_DELAY = 200;

/**
 * `@sesamecare-oss/redlock`, the maintained fork of redlock 5, with one Redis client. Waiting
 * is configured as for redlock: default delay and jitter, retries for about `CONFIG.waitMs`.
 */
export class SesameRedlockAdapter implements LockAdapter<Lock> {
  readonly id = 'sesame-redlock';
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

  static async create(url: string): Promise<SesameRedlockAdapter> {
    const counter = new CommandCounter();
    const client = await countedClient(url, counter);
    const redlock = new Redlock([client], { retryCount: Math.ceil(CONFIG.waitMs / RETRY_DELAY) });
    // Each failed attempt is emitted as an 'error' event, which must have a listener.
    redlock.on('error', () => undefined);
    const version = await versionOf('@sesamecare-oss/redlock');
    return new SesameRedlockAdapter(`@sesamecare-oss/redlock ${version}`, counter, client, redlock);
  }

  acquire(key: string, ttl: number): Promise<Lock> {
    return this.redlock.acquire([`bench:sesame:${key}`], ttl);
  }

  async release(lock: Lock): Promise<void> {
    await lock.release();
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }
}
