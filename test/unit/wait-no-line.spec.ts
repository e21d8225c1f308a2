import { jest } from '@jest/globals';
import { Waiters } from '../../src/engine/waiters.js';
import type { AcquireAttempt } from '../../src/store/lock-store.interface.js';
import {
  granted,
  Notices,
  refused,
  ScriptedCaller,
  settle,
  startWait,
} from '../support/scripted-wait.js';

/**
 * The waiting loop where the store keeps no line (`fair: false`, RedLock), scripted (see
 * test/support/scripted-wait.ts): a release wakes one caller of the process, and every release
 * is answered by an attempt sent after it. Time is Jest's fake time.
 */
describe('Wait, where the store keeps no line', () => {
  let notices: Notices;
  let waiters: Waiters;
  const start = (caller: ScriptedCaller, answered?: AcquireAttempt) =>
    startWait(waiters, caller, answered);

  beforeEach(() => {
    jest.useFakeTimers();
    notices = new Notices();
    waiters = new Waiters(notices.store, false, '@me');
  });

  afterEach(() => {
    waiters.close(() => new Error('closed'));
    jest.useRealTimers();
  });

  it('lets a new caller behind others of its process wait its turn without a first attempt', async () => {
    const a = new ScriptedCaller('a@me', false);
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    const b = new ScriptedCaller('b@me', false);
    void start(b);
    expect(b.attempts).toBe(0);
    // A release wakes the longest-waiting caller only: the callers of one process do not race.
    await notices.tell({ type: 'released' });
    expect([a.attempts, b.attempts]).toEqual([2, 0]);
    await a.answer(granted(1));
    await notices.tell({ type: 'released' });
    expect(b.attempts).toBe(1);
  });

  it('wakes the next caller for a second release heard while the first caller’s attempt was out', async () => {
    const a = new ScriptedCaller('a@me', false);
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    const b = new ScriptedCaller('b@me', false);
    void start(b);
    // Two permits freed at once: both heard while a's woken attempt is out.
    await notices.tell({ type: 'released', id: '1' });
    await notices.tell({ type: 'released', id: '2' });
    expect([a.attempts, b.attempts]).toEqual([2, 1]);
  });

  it('passes a wake-up on when the caller it woke gives up before attempting', async () => {
    const controller = new AbortController();
    const a = new ScriptedCaller('a@me', false, Infinity, controller.signal);
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    const b = new ScriptedCaller('b@me', false);
    void start(b);
    // The release reaches a, which gives up before its loop has sent the attempt.
    notices.listeners.get('lock:k')!({ type: 'released' });
    controller.abort(new Error('gave up'));
    await settle();
    expect([a.attempts, b.attempts]).toEqual([1, 1]);
  });

  it('makes a caller whose re-check is out attempt again for a release heard meanwhile', async () => {
    const a = new ScriptedCaller('a@me', false);
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    await jest.advanceTimersByTimeAsync(70);
    expect(a.attempts).toBe(2);
    // The re-check may have run before the release: its refusal is no answer to it.
    await notices.tell({ type: 'released' });
    await a.answer(refused());
    expect(a.attempts).toBe(3);
  });

  it('makes a newcomer whose first attempt is out attempt again for a release heard meanwhile', async () => {
    const a = new ScriptedCaller('a@me', false);
    void start(a, refused());
    await notices.flow();
    await a.answer(granted(1));
    // The room lingers, subscribed: a newcomer joins it before its first attempt.
    const b = new ScriptedCaller('b@me', false);
    void start(b);
    expect(b.attempts).toBe(1);
    await notices.tell({ type: 'released' });
    await b.answer(refused());
    expect(b.attempts).toBe(2);
  });
});
