import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockService,
  LockShuttingDownError,
  MemoryLockSpace,
} from '../../src/index.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import { OwnStore } from '../support/own-store.js';

/** A store that connects on its first call unless it is opened first (as ZooKeeper's does). */
class OpenedStore extends OwnStore {
  opened = 0;

  constructor() {
    super(new MemoryLockStore(true, new MemoryLockSpace().state, 'lock:'));
  }

  open(): void {
    this.opened++;
  }
}

/**
 * The module's shutdown hooks live on a provider of their own, so that `LockService` offers the
 * lock API only; Nest still finds them, because the module provides that provider.
 */
describe("the lock module's part in boot and shutdown", () => {
  it('opens its store once the app has booted, and not when the boot fails before that', async () => {
    const store = new OpenedStore();
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ store })],
    }).compile();
    expect(store.opened).toBe(0);
    await module.init();
    expect(store.opened).toBe(1);
    await module.close();

    @Injectable()
    class FailsItsInit {
      onModuleInit(): void {
        throw new Error('an init hook failed');
      }
    }
    const unbooted = new OpenedStore();
    const failing = await Test.createTestingModule({
      imports: [LockModule.forRoot({ store: unbooted })],
      providers: [FailsItsInit],
    }).compile();
    await expect(failing.init()).rejects.toThrow('an init hook failed');
    expect(unbooted.opened).toBe(0);
    await failing.close();
  });

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
