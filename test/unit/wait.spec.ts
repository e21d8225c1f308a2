import { jest } from '@jest/globals';
import { Waiters } from '../../src/engine/waiters.js';
import { LockConnectionError, LockKindError, LockNotAcquiredError } from '../../src/lock.errors.js';
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
 * The waiting loop where the store keeps a line (fair mode), scripted (see
 * test/support/scripted-wait.ts). Time is Jest's fake time.
 */
describe('Wait: one caller, one loop', () => {
  let notices: Notices;
  let waiters: Waiters;
  const start = (caller: ScriptedCaller, answered?: AcquireAttempt) =>
    startWait(waiters, caller, answered);

  beforeEach(() => {
    jest.useFakeTimers();
    notices = new Notices();
    waiters = new Waiters(notices.store, true, '@me');
  });

  afterEach(() => {
    waiters.close(() => new Error('closed'));
    jest.useRealTimers();
  });

  it('attempts, waits, and attempts again when its turn is announced', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a);
    expect(a.attempts).toBe(1);
    await a.answer(refused());
    expect(a.events).toEqual(['waits']);
    await notices.flow();
    // Notifications began to flow after its attempt was sent: a turn may have gone unheard.
    expect(a.attempts).toBe(2);
    await a.answer(refused());
    await notices.tell({ type: 'turn', token: 'a@me' });
    expect(a.attempts).toBe(3);
    await a.answer(granted(7));
    expect(a.events).toEqual(['waits', 'holds 7', 'got 7']);
  });
  it('wakes only the caller a turn names', async () => {
    const [a, b] = [new ScriptedCaller('a@me'), new ScriptedCaller('b@me')];
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    void start(b);
    await b.answer(refused());
    await notices.tell({ type: 'turn', token: 'b@me' });
    expect([a.attempts, b.attempts]).toEqual([1, 2]);
    await notices.tell({ type: 'turn', token: 'somebody@else' });
    expect([a.attempts, b.attempts]).toEqual([1, 2]);
  });

  it('attempts again, once its attempt on its way is answered, when woken meanwhile', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    expect(a.attempts).toBe(1);
    await notices.tell({ type: 'turn', token: 'a@me' });
    // The turn came while the attempt was out: its refusal may have run before the release.
    await a.answer(refused());
    expect(a.attempts).toBe(2);
    await a.answer(granted(3));
    expect(a.events).toEqual(['waits', 'holds 3', 'got 3']);
  });

  it('hears a turn that comes while its first attempt is out, where callers of its process wait already', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    const b = new ScriptedCaller('b@me');
    void start(b);
    expect(b.attempts).toBe(1);
    await notices.tell({ type: 'turn', token: 'b@me' });
    await b.answer(refused());
    expect(b.attempts).toBe(2);
  });

  it('tries again after a re-check bounded by the holder’s TTL when nothing is heard', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused(20));
    await notices.flow();
    await a.answer(refused(20));
    await jest.advanceTimersByTimeAsync(21);
    expect(a.attempts).toBe(2);
    await a.answer(refused(10_000));
    // Then within the backoff: 100 ms, jittered by a quarter either way.
    await jest.advanceTimersByTimeAsync(74);
    expect(a.attempts).toBe(2);
    await jest.advanceTimersByTimeAsync(52);
    expect(a.attempts).toBe(3);
  });

  it('holds a lock a release of its process hands it, from that release, with no attempt', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    expect(waiters.successor('lock:k')).toBe('a@me');
    expect(waiters.handOver('lock:k', 'a@me', 9, 1234)).toBe(true);
    await settle();
    expect(a.events).toEqual(['waits', 'holds 9', 'got 9']);
    expect(a.validFrom).toBe(1234);
    // The one attempt it made after notifications began to flow: none since.
    expect(a.attempts).toBe(1);
    // Gone from the room: a second hand-over finds nobody, and the releaser frees the lock.
    expect(waiters.handOver('lock:k', 'a@me', 10, 1300)).toBe(false);
  });

  it('lets the grant of its attempt on its way win over a hand-over, which the store renewed', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    expect(waiters.handOver('lock:k', 'a@me', 9, 1234)).toBe(true);
    await a.answer(granted(11));
    expect(a.events).toEqual(['waits', 'holds 11', 'got 11']);
  });

  it('takes a hand-over that came while its refused attempt was out', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    expect(waiters.handOver('lock:k', 'a@me', 9, 1234)).toBe(true);
    await a.answer(refused());
    expect(a.events).toEqual(['waits', 'holds 9', 'got 9']);
  });

  it('asks again at once after a hand-over or a grant whose answer came too late', async () => {
    const a = new ScriptedCaller('a@me');
    a.tooLate = true;
    void start(a, refused());
    await notices.flow();
    await a.answer(granted(4));
    expect(a.attempts).toBe(2);
    await a.answer(refused());
    expect(waiters.handOver('lock:k', 'a@me', 9, 1234)).toBe(true);
    await settle();
    expect(a.attempts).toBe(3);
    a.tooLate = false;
    await a.answer(granted(12));
    expect(a.events).toEqual(['waits', 'holds 12', 'got 12']);
  });

  it('fails at its deadline with the late grant’s error when no later attempt was answered', async () => {
    const a = new ScriptedCaller('a@me', true, performance.now() + 1_000);
    a.tooLate = true;
    void start(a, granted(4));
    await settle();
    // It asked again at once; that attempt gets no answer before the deadline.
    expect(a.attempts).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(a.events.at(-1)).toBe('failed LockConnectionError: ' + a.late()!.message);
    expect(a.events).toContain('leaves');
  });

  it('times out at its deadline with what its last answer told of the holder, and leaves the line', async () => {
    const a = new ScriptedCaller('a@me', true, performance.now() + 300);
    void start(a, refused(5_000));
    await notices.flow();
    await a.answer(refused(4_000));
    await jest.advanceTimersByTimeAsync(300);
    expect(a.events.slice(-2)).toEqual([
      'leaves',
      `failed LockNotAcquiredError: ${new LockNotAcquiredError('k', 0, 4_000).message}`,
    ]);
    // Its room let it go: a hand-over finds nobody.
    expect(waiters.handOver('lock:k', 'a@me', 9, 1)).toBe(false);
  });

  it('keeps trying while the store cannot be reached, and fails with that error at its deadline', async () => {
    const a = new ScriptedCaller('a@me', true, performance.now() + 500);
    void start(a, refused());
    await notices.flow();
    const outage = new LockConnectionError('k', 'no answer in time');
    await a.fail(outage);
    // Its second wait: 100 ms, jittered by a quarter either way.
    await jest.advanceTimersByTimeAsync(126);
    expect(a.attempts).toBe(2);
    await a.fail(outage);
    await jest.advanceTimersByTimeAsync(500);
    expect(a.events.at(-1)).toBe(`failed LockConnectionError: ${outage.message}`);
  });

  it('fails at once, and leaves the line, on an error that is not about reaching the store', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    await a.fail(new LockKindError('k', 'a semaphore', 'a mutex'));
    expect(a.events.slice(-2)).toEqual(['leaves', expect.stringMatching(/^failed LockKindError/)]);
  });

  it('gives up at once when aborted, and gives back a grant its attempt brings later', async () => {
    const controller = new AbortController();
    const a = new ScriptedCaller('a@me', true, Infinity, controller.signal);
    void start(a, refused());
    await notices.flow();
    controller.abort(new Error('caller gave up'));
    await settle();
    expect(a.events.slice(-2)).toEqual(['leaves', 'failed Error: caller gave up']);
    await a.answer(granted(5));
    expect(a.events.at(-1)).toBe('leaves');
  });

  it('is refused by a shutdown that began while it was refused', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    a.shuttingDown = true;
    await a.answer(refused());
    expect(a.events.at(-1)).toMatch(/^failed LockShuttingDownError/);
    expect(a.events).toContain('leaves');
  });

  it('wakes every caller on a plain release where the store keeps a line, which decides', async () => {
    const [a, b] = [new ScriptedCaller('a@me'), new ScriptedCaller('b@me')];
    void start(a, refused());
    void start(b, refused());
    await notices.flow();
    await a.answer(refused());
    await b.answer(refused());
    await notices.tell({ type: 'released' });
    expect([a.attempts, b.attempts]).toEqual([2, 2]);
  });

  it('retries an outage on its backoff, not on the last answer’s short TTL', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    await a.answer(refused(2));
    a.failsWith = new LockConnectionError('k', 'not connected');
    const before = a.attempts;
    await jest.advanceTimersByTimeAsync(1_000);
    // 3, 100, 200, 400 ms apart, each jittered by a quarter either way.
    expect(a.attempts - before).toBeLessThanOrEqual(5);
  });

  it('wakes a caller that joins a room opened and flowing while its first attempt was out', async () => {
    const a = new ScriptedCaller('a@me');
    void start(a, refused());
    await notices.flow();
    await a.answer(refused());
    // b's first attempt was sent before the room existed, and its turn came before its answer.
    await notices.tell({ type: 'turn', token: 'b@me' });
    const b = new ScriptedCaller('b@me');
    void start(b, refused());
    await settle();
    expect(b.attempts).toBe(1);
  });

  it('fails at its deadline with a conflict when its attempts were answered, though its subscription failed', async () => {
    const failing = new Notices();
    failing.store.subscribe = () =>
      Promise.reject(new LockConnectionError('k', 'connection reset'));
    waiters = new Waiters(failing.store, true, '@me');
    const a = new ScriptedCaller('a@me', true, performance.now() + 400);
    void start(a, refused(5_000));
    await settle();
    await jest.advanceTimersByTimeAsync(60);
    await a.answer(refused(5_000));
    await jest.advanceTimersByTimeAsync(400);
    expect(a.events.at(-1)).toMatch(/^failed LockNotAcquiredError/);
  });
});
