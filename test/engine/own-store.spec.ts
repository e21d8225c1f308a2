import { LockError, LockOptionsError, MemoryLockSpace } from '../../src/index.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import { bootLockApp } from '../support/lock-app.js';
import { OwnStore } from '../support/own-store.js';

describe('a store of the app’s own', () => {
  it('holds the locks of the module it is given to, which closes it when the app shuts down', async () => {
    const space = new MemoryLockSpace();
    const own = new OwnStore(new MemoryLockStore(true, space.state, 'own:'));
    const app = await bootLockApp({ store: own, keyPrefix: 'own:' });
    const lock = await app.locks.acquire('k');
    expect(space.state.locks.has('own:k')).toBe(true);
    expect(await app.locks.isLocked('k')).toBe(true);
    expect(await lock.release()).toBe(true);
    expect(own.calls).toBeGreaterThanOrEqual(2);
    expect(own.closed).toBe(false);
    await app.close();
    expect(own.closed).toBe(true);
  });

  it('without transfer, adopts a handle by renewing its token, and still refuses an altered one', async () => {
    const space = new MemoryLockSpace();
    const boot = (instanceId: string) =>
      bootLockApp({
        store: new OwnStore(new MemoryLockStore(true, space.state, 'own:'), { transfer: false }),
        keyPrefix: 'own:',
        instanceId,
      });
    const [hander, adopter] = [await boot('hander'), await boot('adopter')];
    try {
      const lock = await hander.locks.acquire('k');
      const handle = await lock.handOff();
      const forged = { ...handle, fencingToken: handle.fencingToken + 1 };
      await expect(adopter.locks.adopt(forged)).rejects.toMatchObject({ name: 'LockOptionsError' });
      const adopted = await adopter.locks.adopt(handle);
      // The hold keeps the token, and the instance that inspect names, of the one that took it.
      expect(adopted).toMatchObject({ token: lock.token, fencingToken: lock.fencingToken });
      expect((await adopter.locks.inspect('k')).holders).toMatchObject([
        { owner: 'hander', fencingToken: lock.fencingToken },
      ]);
      expect(await adopted.release()).toBe(true);
    } finally {
      await Promise.all([hander.close(), adopter.close()]);
    }
  });

  it('needs only the six methods of every store; a call that needs a facet it lacks is refused by name', async () => {
    const space = new MemoryLockSpace();
    const own = new OwnStore(new MemoryLockStore(true, space.state, 'own:'), { core: true });
    const app = await bootLockApp({ store: own, keyPrefix: 'own:' });
    try {
      // Locks, waits, renewals and releases need nothing else.
      const lock = await app.locks.acquire('k', { ttl: 300 });
      const waiter = app.locks.acquire('k', { waitTimeout: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
      expect(await (await waiter).release()).toBe(true);
      for (const [call, method] of [
        [() => app.locks.isLocked('k'), 'isLocked'],
        [() => app.locks.inspect('k'), 'inspect'],
        [() => app.locks.forceRelease('k'), 'forceRelease'],
        [() => app.locks.writeFenced('doc:1', 'v', lock.fencingToken), 'writeFenced'],
      ] as const) {
        const error: unknown = await call().then(
          () => undefined,
          (reason: unknown) => reason,
        );
        expect(error).toBeInstanceOf(LockError);
        expect(error).toMatchObject({
          message: `LockService.${method}: nothing with an own store`,
        });
      }
    } finally {
      await app.close();
    }
  });

  it('is refused at boot when a facet is there but not a method, or has the old writeFenced, or hands locks off with no way to adopt', async () => {
    const space = new MemoryLockSpace();
    const inner = new MemoryLockStore(true, space.state, 'own:');
    const broken = Object.assign(new OwnStore(inner), { inspect: 'yes' });
    await expect(bootLockApp({ store: broken, keyPrefix: 'own:' })).rejects.toMatchObject({
      option: 'store.inspect',
    });
    const old = Object.assign(new OwnStore(inner), {
      writeFenced: (
        _resource: string,
        _guard: string,
        _value: string,
        _fence: number,
        _ttl: number,
      ) => Promise.resolve({ written: true as const }),
    });
    await expect(bootLockApp({ store: old, keyPrefix: 'own:' })).rejects.toMatchObject({
      option: 'store.writeFenced',
    });
    const core = new OwnStore(inner, { core: true });
    const handing = Object.assign(core, { capabilities: { ...core.capabilities, handles: true } });
    const refused: unknown = await bootLockApp({ store: handing, keyPrefix: 'own:' }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(refused).toBeInstanceOf(LockOptionsError);
    expect(refused).toMatchObject({ option: 'store.inspect' });
  });
});
