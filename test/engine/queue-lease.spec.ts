import type { AcquireOptions, Lock } from '../../src/index.js';
import { QUEUE_LEASE } from '../../src/store/lock-store.interface.js';
import { backends, withLockApps } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';

/**
 * Callers of one process that start waiting together each take a place in the store's queue,
 * but only the first of them checks in while they wait: the places of the others must not lapse
 * (as a dead waiter's does) however long the wait, or a caller of another process that came
 * later is served before them.
 */
describe.each(backends)('a wait longer than the queue lease (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  const { apps } = withLockApps(3, makeBackend, { keyPrefix: prefix, waitTimeout: 60_000 });

  it.each([
    ['a mutex', 'mutex', {}, {}, {}],
    ['a read-write lock', 'rw', { mode: 'read' }, { mode: 'write' }, { mode: 'read' }],
    ['a semaphore', 'semaphore', { limit: 1 }, { limit: 1 }, { limit: 1 }],
  ] as [string, string, AcquireOptions, AcquireOptions, AcquireOptions][])(
    'keeps every waiter its place in %s: served in arrival order across instances',
    async (_, name, holding, early, late) => {
      const [holder, first, second] = apps;
      const held: Lock = await holder.locks.acquire(name, holding);
      const order: string[] = [];
      const take = (app: (typeof apps)[number], who: string, options: AcquireOptions) =>
        app.locks.using(name, () => void order.push(who), options);
      const earlyCalls = [take(first, 'A', early), take(first, 'B', early)];
      await sleep(300);
      const lateCall = take(second, 'C', late);
      await sleep(QUEUE_LEASE + 1_000);
      await held.release();
      await Promise.all([...earlyCalls, lateCall]);
      expect(order).toEqual(['A', 'B', 'C']);
    },
    30_000,
  );
});
