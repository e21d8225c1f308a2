import type { LockEngine } from '../../src/engine/lock-engine.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import { LockLifecycle } from '../../src/lock.lifecycle.js';
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
      await app.module.get(LockLifecycle).onApplicationShutdown();
      const result = await outcome;
      // Either refused, or handed out and given back by shutdown with its signal aborted.
      if ('lock' in result) expect(result.lock.signal.aborted).toBe(true);
      expect(processSpace.live(processSpace.locks, `${prefix}${key}`)).toBeUndefined();
      await app.close();
    }
  });
});

describe('a release on its way when shutdown begins', () => {
  it('ends the lock for good if it fails: not renewed while the process drains, its signal aborted', async () => {
    const prefix = uniquePrefix();
    const app = await bootLockApp({ store: 'memory', keyPrefix: prefix, ttl: 10_000 });
    const { store } = app.module.get<LockEngine>(LOCK_ENGINE);
    const lock = await app.locks.acquire('in-flight');
    const release = store.release.bind(store);
    let fail!: (error: Error) => void;
    let calls = 0;
    store.release = (key, token, successor) =>
      calls++ === 0 ? new Promise((_, reject) => (fail = reject)) : release(key, token, successor);

    const releasing = lock.release();
    await app.module.get(LockLifecycle).beforeApplicationShutdown();
    fail(new Error('connection lost'));
    await expect(releasing).rejects.toThrow('connection lost');

    expect(lock.signal.aborted).toBe(true);
    // The engine tried once more, and the lock is gone rather than renewed.
    expect(calls).toBe(2);
    expect(processSpace.live(processSpace.locks, `${prefix}in-flight`)).toBeUndefined();
    await app.close();
  });
});
