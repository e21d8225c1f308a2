import type { LockEngine } from '../../src/engine/lock-engine.js';
import { LockShuttingDownError } from '../../src/index.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import { LockLifecycle } from '../../src/lock.lifecycle.js';
import { bootLockApp, sleep, uniquePrefix } from '../support/lock-app.js';

/**
 * Once shutdown begins, this process takes no more locks. Callers learn it from a
 * `LockShuttingDownError` naming their key, which tells them (and `LockExceptionFilter`, their
 * clients) that another instance may serve them: the lock itself may well be free.
 */
describe('calls refused because shutdown has begun', () => {
  it('fail callers still waiting then, each with its own key', async () => {
    const prefix = uniquePrefix();
    const app = await bootLockApp({ store: 'memory', keyPrefix: prefix });
    const { waiters } = app.module.get<LockEngine>(LOCK_ENGINE);
    const held = await Promise.all(['a', 'b'].map((key) => app.locks.acquire(key)));
    const outcomes = ['a', 'a', 'b'].map((key) =>
      app.locks.acquire(key, { waitTimeout: 60_000 }).catch((error: unknown) => error),
    );
    while (!waiters.has(`${prefix}a`) || !waiters.has(`${prefix}b`)) await sleep(5);

    await app.module.get(LockLifecycle).beforeApplicationShutdown();
    const errors = await Promise.all(outcomes);
    for (const error of errors) expect(error).toBeInstanceOf(LockShuttingDownError);
    expect(errors.map((error) => (error as LockShuttingDownError).key)).toEqual(['a', 'a', 'b']);
    expect(held.map((lock) => lock.signal.aborted)).toEqual([true, true]);
    await app.close();
  });

  it('fail every call made afterwards, naming its key', async () => {
    const app = await bootLockApp({ store: 'memory', keyPrefix: uniquePrefix() });
    await app.module.get(LockLifecycle).beforeApplicationShutdown();
    const calls = [
      app.locks.acquire('late:acquire'),
      app.locks.tryAcquire('late:try'),
      app.locks.using('late:using', () => 'ran'),
    ];
    const errors = await Promise.all(calls.map((call) => call.catch((error: unknown) => error)));
    for (const error of errors) expect(error).toBeInstanceOf(LockShuttingDownError);
    expect(errors.map((error) => (error as LockShuttingDownError).key)).toEqual([
      'late:acquire',
      'late:try',
      'late:using',
    ]);
    await app.close();
  });
});
