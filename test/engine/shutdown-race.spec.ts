import { processSpace } from '../../src/store/memory/memory-space.js';
import { bootLockApp, uniquePrefix } from '../support/lock-app.js';

/**
 * The memory store answers within microtasks, so every step between an attempt's answer and
 * the caller getting its lock can meet the start of shutdown: whichever it meets, nothing may be
 * left held or renewed.
 */
describe('an acquisition that meets shutdown', () => {
  it('leaves nothing held, whichever step it had reached when shutdown began', async () => {
    const prefix = uniquePrefix();
    for (let depth = 0; depth < 30; depth++) {
      const app = await bootLockApp({ store: 'memory', keyPrefix: prefix });
      const key = `race:${depth}`;
      const outcome = app.locks.acquire(key, { ttl: 10_000 }).then(
        (lock) => ({ lock }),
        (error: unknown) => ({ error }),
      );
      for (let i = 0; i < depth; i++) await Promise.resolve();
      await app.locks.onApplicationShutdown();
      const result = await outcome;
      // Either refused, or handed out and given back by shutdown with its signal aborted.
      if ('lock' in result) expect(result.lock.signal.aborted).toBe(true);
      expect(processSpace.live(processSpace.locks, `${prefix}${key}`)).toBeUndefined();
      await app.close();
    }
  });
});
