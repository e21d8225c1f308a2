import type { LockService } from '../../src/index.js';
import { backends, withLockApps, type Backend } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';

/**
 * A non-atomic read-modify-write of a counter in Redis: read, pause, write back + 1. Two
 * overlapping runs lose an update, so the final count proves whether exclusion held.
 */
async function unsafeIncrement(store: Backend, counter: string): Promise<void> {
  const value = Number((await store.get(counter)) ?? '0');
  await sleep(Math.random() * 3);
  await store.set(counter, String(value + 1));
}

describe.each(backends)(
  'mutual exclusion across LockService instances (%s store)',
  (_, makeBackend) => {
    const prefix = uniquePrefix();
    const context = withLockApps(3, makeBackend, { keyPrefix: prefix, waitTimeout: 60_000 });
    const { apps } = context;

    it('the same read-modify-write loses updates without a lock (the check can fail)', async () => {
      const counter = `${prefix}counter:unlocked`;
      await Promise.all(Array.from({ length: 30 }, () => unsafeIncrement(context.store, counter)));
      expect(Number(await context.store.get(counter))).toBeLessThan(30);
    });

    it('loses no update when 90 concurrent callers on 3 services run it under one lock', async () => {
      const counter = `${prefix}counter:locked`;
      const callers = Array.from({ length: 90 }, (_, i) => apps[i % apps.length].locks);
      const fences: number[] = [];
      await Promise.all(
        callers.map((locks: LockService) =>
          locks.using('counter', async (lock) => {
            fences.push(lock.fencingToken);
            await unsafeIncrement(context.store, counter);
          }),
        ),
      );
      expect(Number(await context.store.get(counter))).toBe(90);
      expect(fences).toEqual([...fences].sort((a, b) => a - b));
      expect(new Set(fences).size).toBe(90);
    });
  },
);
