import { MemoryLockSpace, type Lock } from '../../src/index.js';
import { aborted, bootLockApp, type LockApp } from '../support/lock-app.js';

describe('memory spaces: isolated unit tests, and instances that share one', () => {
  const apps: LockApp[] = [];
  const boot = async (memorySpace?: MemoryLockSpace) => {
    const app = await bootLockApp({ store: 'memory', memorySpace, ttl: 200 });
    apps.push(app);
    return app.locks;
  };

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('keeps the locks of different spaces apart, and shares them within one space', async () => {
    const [space, other] = [new MemoryLockSpace(), new MemoryLockSpace()];
    const [first, sameSpace, otherSpace] = [
      await boot(space),
      await boot(space),
      await boot(other),
    ];
    const lock = await first.acquire('order:1');
    expect(await sameSpace.tryAcquire('order:1')).toBeNull();
    expect(await sameSpace.isLocked('order:1')).toBe(true);
    const elsewhere = await otherSpace.tryAcquire('order:1');
    expect(elsewhere).not.toBeNull();
    await Promise.all([lock.release(), elsewhere?.release()]);
  });

  it('without a space of their own, memory stores share the process one', async () => {
    const [first, second] = [await boot(), await boot()];
    const lock = await first.acquire('process-wide');
    expect(await second.tryAcquire('process-wide')).toBeNull();
    await lock.release();
  });

  it('clear() frees every lock: waiters get in, and holders learn they lost theirs', async () => {
    const space = new MemoryLockSpace();
    const [holder, waiter] = [await boot(space), await boot(space)];
    const lock = await holder.acquire('job');
    const lost = aborted(lock);
    const waiting = waiter.acquire('job', { waitTimeout: 30_000 });
    await expect(waiter.tryAcquire('job')).resolves.toBeNull();

    space.clear();
    const next: Lock = await waiting;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(String(await lost)).toContain('LockLostError');
    expect(await lock.release()).toBe(false);
    await next.release();
    expect(await holder.isLocked('job')).toBe(false);
  });

  it('clear() frees semaphores and read-write locks too', async () => {
    const space = new MemoryLockSpace();
    const [holder, other] = [await boot(space), await boot(space)];
    const permits = [
      await holder.acquire('api', { limit: 2 }),
      await holder.acquire('api', { limit: 2 }),
    ];
    const reader = await holder.acquire('report', { mode: 'read' });
    expect(await other.tryAcquire('api', { limit: 2 })).toBeNull();
    expect(await other.tryAcquire('report', { mode: 'write' })).toBeNull();

    space.clear();
    const [nextPermit, writer] = [
      await other.tryAcquire('api', { limit: 2 }),
      await other.tryAcquire('report', { mode: 'write' }),
    ];
    expect(nextPermit).not.toBeNull();
    expect(writer).not.toBeNull();
    expect(await permits[0].release()).toBe(false);
    expect(await reader.release()).toBe(false);
    await Promise.all([nextPermit?.release(), writer?.release()]);
  });
});
