import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockOptionsError,
  LockService,
  MemoryLockSpace,
  type LockModuleOptions,
  type LockOptionsFactory,
} from '../../src/index.js';

const space = new MemoryLockSpace();

@Injectable()
class LockSettings {
  readonly keyPrefix = 'factory:';
}

@Module({ providers: [LockSettings], exports: [LockSettings] })
class SettingsModule {}

/** What a user writes for `useClass`: a provider with dependencies of its own. */
@Injectable()
class LockConfig implements LockOptionsFactory {
  constructor(private readonly settings: LockSettings) {}

  createLockOptions(): Promise<LockModuleOptions> {
    const { keyPrefix } = this.settings;
    return Promise.resolve({ store: 'memory', memorySpace: space, keyPrefix, ttl: 1_000 });
  }
}

/** The same, returning an option the module refuses. */
@Injectable()
class BadLockConfig implements LockOptionsFactory {
  createLockOptions(): LockModuleOptions {
    return { store: 'memory', ttl: -1 };
  }
}

describe('forRootAsync with a LockOptionsFactory class', () => {
  afterEach(() => space.clear());

  it('boots with useClass, injecting the class its dependencies, and takes locks', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRootAsync({ imports: [SettingsModule], useClass: LockConfig })],
    }).compile();
    try {
      const locks = moduleRef.get(LockService);
      const lock = await locks.acquire('order:1');
      expect(lock.key).toBe('factory:order:1');
      expect(await locks.tryAcquire('order:1')).toBeNull();
      expect(await lock.release()).toBe(true);
    } finally {
      await moduleRef.close();
    }
  });

  it('boots with useExisting, reusing the provider the importing module gives', async () => {
    @Module({ providers: [LockSettings, LockConfig], exports: [LockConfig] })
    class ConfigModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRootAsync({ imports: [ConfigModule], useExisting: LockConfig })],
    }).compile();
    try {
      await expect(moduleRef.get(LockService).isLocked('order:1')).resolves.toBe(false);
    } finally {
      await moduleRef.close();
    }
  });

  it("validates what the class returns, as forRoot's options are", async () => {
    const compiling = Test.createTestingModule({
      imports: [LockModule.forRootAsync({ useClass: BadLockConfig })],
    }).compile();
    await expect(compiling).rejects.toThrow(LockOptionsError);
    await expect(compiling).rejects.toMatchObject({ option: 'ttl' });
  });
});
