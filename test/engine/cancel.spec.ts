import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockModule, LockOptionsError, WithLock } from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { holderIn } from '../support/lock-value.js';

describe.each(backends)('a cancellable wait (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let holder: LockApp;
  let waiter: LockApp;
  let store: Backend;

  beforeAll(async () => {
    store = makeBackend();
    holder = await bootLockApp(store.options({ keyPrefix: prefix }));
    waiter = await bootLockApp(store.options({ keyPrefix: prefix }));
  });

  afterAll(async () => {
    await Promise.all([holder.close(), waiter.close()]);
    await store.close();
  });

  it('leaves the queue at once and rejects with the reason when the signal aborts', async () => {
    const held = await holder.locks.acquire('cancel', { ttl: 10_000 });
    const controller = new AbortController();
    const waited = waiter.locks.acquire('cancel', {
      waitTimeout: 30_000,
      signal: controller.signal,
    });
    await sleep(100);
    const reason = new Error('the client went away');
    controller.abort(reason);
    await expect(waited).rejects.toBe(reason);
    // Not handed to the caller that left: after the release nobody holds it.
    await held.release();
    await sleep(50);
    expect(await store.exists(held.key)).toBe(0);
  });

  it('rejects at once with the reason of a signal aborted before the call, taking nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(waiter.locks.acquire('aborted', { signal: controller.signal })).rejects.toThrow(
      'too late',
    );
    expect(await store.exists(`${prefix}aborted`)).toBe(0);
  });

  it('lets the callers behind an abandoned one go on, in order', async () => {
    const held = await holder.locks.acquire('line', { ttl: 10_000 });
    const controller = new AbortController();
    const order: string[] = [];
    const wait = (name: string, signal?: AbortSignal) =>
      waiter.locks
        .using('line', () => void order.push(name), { waitTimeout: 30_000, signal })
        .catch(() => order.push(`${name} left`));
    const calls = [wait('first', controller.signal), wait('second'), wait('third')];
    await sleep(100);
    controller.abort();
    await held.release();
    await Promise.all(calls);
    expect(order.filter((entry) => !entry.endsWith('left'))).toEqual(['second', 'third']);
    expect(order).toContain('first left');
  });

  it('has no effect once the lock is held', async () => {
    const controller = new AbortController();
    const lock = await waiter.locks.acquire('held', { signal: controller.signal });
    controller.abort();
    expect(lock.signal.aborted).toBe(false);
    expect(holderIn(await store.get(lock.key))).toBe(lock.token);
    expect(await lock.release()).toBe(true);
  });

  it('refuses a signal that is not an AbortSignal, naming the option', async () => {
    await expect(
      waiter.locks.acquire('bad', { signal: 'stop' as unknown as AbortSignal }),
    ).rejects.toMatchObject({ name: LockOptionsError.name, option: 'signal' });
  });
});

describe('a signal in @WithLock options', () => {
  it('fails the boot, since a decorator has no per-call signal', async () => {
    @Injectable()
    class Jobs {
      @WithLock('job', { signal: new AbortController().signal })
      async run() {}
    }
    @Module({ imports: [LockModule.forRoot({ store: 'memory' })], providers: [Jobs] })
    class AppModule {}
    const module = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await expect(module.init()).rejects.toMatchObject({
      name: LockOptionsError.name,
      option: 'signal',
    });
    await module.close();
  });
});
