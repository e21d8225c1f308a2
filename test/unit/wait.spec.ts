import { jest } from '@jest/globals';
import type { HeldLock } from '../../src/engine/held-lock.js';
import { Wait, type WaitingCaller } from '../../src/engine/wait.js';
import { Waiters } from '../../src/engine/waiters.js';
import { LockConnectionError, LockKindError, LockNotAcquiredError } from '../../src/lock.errors.js';
import type { AcquireAttempt, LockEvent, LockStore } from '../../src/store/lock-store.interface.js';

/**
 * The waiting loop, scripted: a caller whose attempts the test answers one by one, in a real
 * `Waiters` over a store that only subscribes (the test says when notifications flow, and
 * what they bring). Time is Jest's fake time.
 */

/** A caller whose attempts answer as the test says, recording what happens to it. */
class ScriptedCaller implements WaitingCaller {
  readonly events: string[] = [];
  readonly name = 'k';
  readonly key = 'lock:k';
  readonly insideLock = false;
  attempts = 0;
  /** Grants whose answers came after the caller's validity ran out (the store paused). */
  tooLate = false;
  shuttingDown = false;
  validFrom?: number;
  private replies: { resolve: (attempt: AcquireAttempt) => void; reject: (e: Error) => void }[] =
    [];

  constructor(
    readonly token: string,
    readonly queueing = true,
    readonly deadline = Infinity,
    readonly signal?: AbortSignal,
  ) {}

  /** Every attempt fails at once with this error (a store that cannot be reached). */
  failsWith?: Error;

  attempt(): Promise<AcquireAttempt> {
    this.attempts++;
    if (this.failsWith) return Promise.reject(this.failsWith);
    return new Promise((resolve, reject) => this.replies.push({ resolve, reject }));
  }

  /** Answers the attempt on its way. */
  async answer(attempt: AcquireAttempt): Promise<void> {
    this.reply().resolve(attempt);
    await settle();
  }

  /** Fails the attempt on its way. */
  async fail(error: Error): Promise<void> {
    this.reply().reject(error);
    await settle();
  }

  private reply() {
    const reply = this.replies.shift();
    if (!reply) throw new Error(`${this.token} has no attempt on its way`);
    return reply;
  }

  hold(fencingToken: number, validFrom: number): HeldLock {
    this.events.push(`holds ${fencingToken}`);
    this.validFrom = validFrom;
    return { fencingToken } as HeldLock;
  }
  late(): LockConnectionError | undefined {
    return this.tooLate ? new LockConnectionError('k', 'the answer came too late') : undefined;
  }
  refused(): boolean {
    return this.shuttingDown;
  }
  leave(): void {
    this.events.push('leaves');
  }
  waiting(): void {
    this.events.push('waits');
  }
  notAcquired(pttl: number): Error {
    return new LockNotAcquiredError(this.name, 0, pttl);
  }
}

/** A store whose subscriptions resolve when the test says, and whose events the test sends. */
class Notices {
  listeners = new Map<string, (event: LockEvent) => void>();
  private pending: (() => void)[] = [];
  readonly store = {
    capabilities: { queueing: true },
    subscribe: (key: string, onEvent: (event: LockEvent) => void) =>
      new Promise<() => void>((resolve) => {
        this.pending.push(() => {
          this.listeners.set(key, onEvent);
          resolve(() => this.listeners.delete(key));
        });
      }),
  } as unknown as LockStore;

  /** Notifications start to flow. */
  async flow(): Promise<void> {
    for (const start of this.pending.splice(0)) start();
    await settle();
  }

  async tell(event: LockEvent): Promise<void> {
    this.listeners.get('lock:k')?.(event);
    await settle();
  }
}

const refused = (pttl = 10_000): AcquireAttempt => ({ acquired: false, pttl });
const granted = (fencingToken: number): AcquireAttempt => ({ acquired: true, fencingToken });
const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('Wait: one caller, one loop', () => {
  let notices: Notices;
  let waiters: Waiters;
  const start = (caller: ScriptedCaller, answered?: AcquireAttempt) => {
    const outcome = new Wait(caller, waiters).run(
      answered ? { answer: answered, sentAt: 0 } : undefined,
    );
    outcome.then(
      (lock) => caller.events.push(`got ${lock.fencingToken}`),
      (error: Error) => caller.events.push(`failed ${error.name}: ${error.message}`),
    );
    return outcome;
  };

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

  describe('where the store keeps no line', () => {
    beforeEach(() => {
      waiters = new Waiters(notices.store, false, '@me');
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
