import { MemoryLockSpace } from '../../src/index.js';
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
});
