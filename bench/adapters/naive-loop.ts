import { CommandCounter } from '../redis/instrument.js';
import { countedClient } from '../redis/server.js';
import { now, sleep } from '../stats.js';
import { RawFloorAdapter, type RawHandle } from './raw-floor.js';

const RETRY_EVERY_MS = 50;

/**
 * The textbook Redis lock: `SET NX PX`, and when the key is held, sleep 50 ms and try again.
 * It releases with the floor's compare-and-delete, so that only its way of waiting differs.
 */
export class NaiveLoopAdapter extends RawFloorAdapter {
  override readonly id = 'naive-loop';
  override readonly name = `naive loop (SET NX PX retried every ${RETRY_EVERY_MS} ms)`;
  override readonly waiting = `polls every ${RETRY_EVERY_MS} ms`;

  static override async create(url: string): Promise<NaiveLoopAdapter> {
    const counter = new CommandCounter();
    return new NaiveLoopAdapter(counter, await countedClient(url, counter));
  }

  override async acquire(key: string, ttl: number, waitMs: number): Promise<RawHandle> {
    const deadline = now() + waitMs;
    for (;;) {
      const handle = await this.trySet(key, ttl);
      if (handle) return handle;
      if (now() + RETRY_EVERY_MS > deadline) throw new Error(`naive loop: ${key} still held`);
      await sleep(RETRY_EVERY_MS);
    }
  }
}
