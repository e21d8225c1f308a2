import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockService,
  LockShuttingDownError,
  MemoryLockSpace,
} from '../../src/index.js';

/**
 * The module's shutdown hooks live on a provider of their own, so that `LockService` offers the
 * lock API only; Nest still finds them, because the module provides that provider.
 */
describe("the lock module's part in shutdown", () => {
  it('leaves no lifecycle hook on the public LockService', () => {
    const hooks = Object.getOwnPropertyNames(LockService.prototype).filter((name) =>
      /^(before|on)Application/.test(name),
    );
    expect(hooks).toEqual([]);
  });

  it('still runs when the app closes: the lock is released and later calls are refused', async () => {
    const memorySpace = new MemoryLockSpace();
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ store: 'memory', memorySpace, shutdownGrace: 0 })],
    }).compile();
    await module.init();
    const locks = module.get(LockService);
    const lock = await locks.acquire('order:1');

    await module.close();

    expect(lock.signal.aborted).toBe(true);
    await expect(locks.acquire('order:2')).rejects.toBeInstanceOf(LockShuttingDownError);
    await expect(locks.isLocked('order:1')).resolves.toBe(false);
  });
});
