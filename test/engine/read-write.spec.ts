import { LockKindError } from '../../src/index.js';
import { backends, withLockApps } from '../support/backends.js';
import { uniquePrefix } from '../support/lock-app.js';
import {
  crowdReadWrite,
  readersAndWritersInOrder,
  writerAmidReaders,
} from '../support/kind-scenarios.js';

describe.each(backends)('read-write locks (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  const context = withLockApps(3, makeBackend, { keyPrefix: prefix, waitTimeout: 60_000 });
  const { apps } = context;
  const keyOf = (name: string) => prefix + name;

  it('lets readers overlap, and never a writer with anyone', async () => {
    const { clashes, mostReaders, fences } = await crowdReadWrite(apps, 'report', 60, 5);
    expect(clashes).toEqual([]);
    expect(mostReaders).toBeGreaterThan(1);
    expect(new Set(fences).size).toBe(60);
    expect(await context.store.exists(keyOf('report'))).toBe(0);
    expect(await context.store.lineLength(keyOf('report'))).toBe(0);
  });

  it('lets a writer in before any reader that came after it, however many keep coming', async () => {
    const { cutIn, launchedWhileWaiting } = await writerAmidReaders(
      apps,
      'busy',
      async () => (await context.store.lineLength(keyOf('busy'))) > 0,
      { readMs: 20, gapMs: 3 },
    );
    expect(cutIn).toEqual([]);
    // Readers did keep coming while the writer waited.
    expect(launchedWhileWaiting).toBeGreaterThan(0);
  });

  it('serves readers and writers of every instance in the order they came', async () => {
    const [afterHolder, afterFirstReader, atLast] = await readersAndWritersInOrder(
      apps,
      'order',
      () => context.store.lineLength(keyOf('order')),
    );
    // The writer waits for the reader before it; the readers after the writer wait for it.
    expect(afterHolder).toEqual(['read0']);
    expect(afterFirstReader).toEqual(['read0', 'write1']);
    // Both readers behind the writer get in together, in either order.
    expect(atLast.slice(0, 2)).toEqual(['read0', 'write1']);
    expect(atLast.slice(2).sort()).toEqual(['read2', 'read3']);
  });

  it('refuses a semaphore, and a reader of a key held as a mutex', async () => {
    const reader = await apps[0].locks.acquire('kinds', { mode: 'read' });
    await expect(apps[1].locks.tryAcquire('kinds', { limit: 3 })).rejects.toThrow(
      new LockKindError('kinds', 'a read-write lock', 'a semaphore of limit 3'),
    );
    // A writer of the read-write lock is a kind of its own, as it should be for a mutex.
    expect(await apps[1].locks.tryAcquire('kinds', { mode: 'write' })).toBeNull();
    await reader.release();
    const mutex = await apps[1].locks.acquire('kinds');
    await expect(apps[2].locks.tryAcquire('kinds', { mode: 'read' })).rejects.toThrow(
      new LockKindError('kinds', 'a mutex', 'a read-write lock (read)'),
    );
    await mutex.release();
  });

  it('lets work nested in a read or write reuse it, and refuses an upgrade', async () => {
    const { locks } = apps[0];
    await locks.using(
      'nested',
      async (outer) => {
        const inner = await locks.using('nested', (lock) => lock, { mode: 'read' });
        expect(inner.token).toBe(outer.token);
        await expect(locks.using('nested', () => 1, { mode: 'write' })).rejects.toThrow(
          /held as a read-write lock \(read\) by the surrounding work/,
        );
      },
      { mode: 'read' },
    );
    await locks.using(
      'nested',
      async (outer) => {
        const inner = await locks.using('nested', (lock) => lock, { mode: 'read' });
        expect(inner.token).toBe(outer.token);
      },
      { mode: 'write' },
    );
  });
});
