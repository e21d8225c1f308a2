import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Leader,
  LeaderService,
  LockKeyResolutionError,
  LockModule,
  LockOptionsError,
  MemoryLockSpace,
  type Leadership,
  type LockModuleOptions,
} from '../../src/index.js';

/** Boots an app with `providers` on `options` (the memory store unless given). */
async function boot(providers: (new () => object)[], options?: LockModuleOptions) {
  const module = await Test.createTestingModule({
    imports: [
      LockModule.forRoot(options ?? { store: 'memory', memorySpace: new MemoryLockSpace() }),
    ],
    providers,
  }).compile();
  await module.init();
  return module;
}

/** The error the app's boot fails with. */
async function bootError(providers: (new () => object)[], options?: LockModuleOptions) {
  const failed = await boot(providers, options).then(
    async (module) => {
      await module.close();
      return undefined;
    },
    (error: unknown) => error,
  );
  if (!failed) throw new Error('the app booted');
  return failed as Error;
}

/**
 * `@Leader` is checked when the app boots, as `@WithLock` is, and its election runs on the
 * memory store with no server: one instance leads, observe() follows it, shutdown ends it.
 */
describe('@Leader at boot', () => {
  it('refuses an election name that is not a lock name, naming the method', async () => {
    @Injectable()
    class Empty {
      @Leader('')
      work() {}
    }
    const error = await bootError([Empty]);
    expect(error).toBeInstanceOf(LockKeyResolutionError);
    expect(error.message).toMatch(/leader name must not be empty/);
  });

  it('refuses a bad ttl, naming the option and the method', async () => {
    @Injectable()
    class Short {
      @Leader('short', { ttl: 5 })
      work() {}
    }
    const error = await bootError([Short]);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error).toMatchObject({ option: 'ttl', value: 5 });
    expect(error.message).toMatch(/^@Leader on Short\.work: /);
  });

  it('refuses two methods of one app that stand for the same election', async () => {
    @Injectable()
    class Twice {
      @Leader('twice')
      one() {}
      @Leader('twice')
      other() {}
    }
    const error = await bootError([Twice]);
    expect(error).toMatchObject({ option: 'name', value: 'twice' });
  });

  it('refuses RedLock, saying why', async () => {
    @Injectable()
    class OnRedlock {
      @Leader('redlock')
      work() {}
    }
    const masters = ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'];
    const error = await bootError([OnRedlock], { redis: masters });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error).toMatchObject({ option: '@Leader', value: 'redlock' });
    expect(error.message).toMatch(/nothing with RedLock: RedLock keeps no line/);
  });

  it('elects the one instance, which observe() follows until shutdown ends its term', async () => {
    const terms: Leadership[] = [];
    @Injectable()
    class Alone {
      @Leader('alone')
      work(leadership: Leadership) {
        terms.push(leadership);
      }
    }
    const module = await boot([Alone]);
    const leaders = module.get(LeaderService);
    const seen: boolean[] = [];
    let completed = false;
    leaders.observe('alone').subscribe({
      next: (leading) => seen.push(leading),
      complete: () => (completed = true),
    });
    while (!leaders.isLeader('alone')) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(terms).toHaveLength(1);
    expect(leaders.isLeader('nobody')).toBe(false);
    await leaders.resign('nobody');
    await module.close();
    expect(terms[0].signal.aborted).toBe(true);
    expect(leaders.isLeader('alone')).toBe(false);
    expect([seen, completed]).toEqual([[true, false], true]);
  });
});
