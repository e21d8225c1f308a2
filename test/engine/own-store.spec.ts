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
});
