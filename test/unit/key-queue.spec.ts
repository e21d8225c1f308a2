import { jest } from '@jest/globals';
import { KeyQueue } from '../../src/engine/key-queue.js';
import type { Waiter } from '../../src/engine/waiter.js';
import { LockConnectionError, LockKindError } from '../../src/lock.errors.js';
import { QUEUE_LEASE, type AcquireAttempt } from '../../src/store/lock-store.interface.js';

/** A waiter whose attempts answer as the test says, recording what happens to it. */
class ScriptedWaiter implements Waiter {
  readonly events: string[] = [];
  readonly name = 'k';
  attempts = 0;
  /** Grants come after the caller's validity ran out (the store paused). */
  tooLate = false;
  private replies: { resolve: (attempt: AcquireAttempt) => void; reject: (e: Error) => void }[] =
    [];

  constructor(
    readonly token: string,
    readonly deadline = Infinity,
  ) {}

  attempt(): Promise<AcquireAttempt> {
    this.attempts++;
    return new Promise((resolve, reject) => this.replies.push({ resolve, reject }));
  }

  /** Answers the attempt on its way. */
  answer(attempt: AcquireAttempt): void {
    if (!attempt.acquired && attempt.lastFence !== undefined) this.lastFence = attempt.lastFence;
    this.reply().resolve(attempt);
  }

  /** What the last refusal said of the fencing tokens issued before it ran. */
  private lastFence = Infinity;

  /** Its first attempt, made before it joined the queue, was refused with `lastFence`. */
  queuedBefore(lastFence: number): void {
    this.lastFence = lastFence;
  }

  /** Fails the attempt on its way. */
  fail(error: Error): void {
    this.reply().reject(error);
  }

  private reply() {
    const reply = this.replies.shift();
    if (!reply) throw new Error(`${this.token} has no attempt on its way`);
    return reply;
  }

  late(): LockConnectionError | undefined {
    return this.tooLate ? new LockConnectionError('k', 'the answer came too late') : undefined;
  }
  /** Dates a grant by its fencing token as `Acquisition` does, from a made-up send time. */
  noticeGrant(fencingToken: number): { validFrom: number; validFor: number } | undefined {
    return fencingToken > this.lastFence ? { validFrom: 7, validFor: 500 } : undefined;
  }
  acquired(fencingToken: number, validFrom: number, validFor?: number): void {
    const span = validFor === undefined ? '' : ` for ${validFor}`;
    this.events.push(`acquired ${fencingToken} from ${validFrom}${span}`);
  }
  failed(error: unknown): void {
    this.events.push(`failed ${String(error)}`);
  }
  timedOut(pttl: number): void {
    this.events.push(`timed out (pttl ${pttl})`);
  }
  abandoned(): void {
    this.events.push('abandoned');
  }
}

const refused = (pttl = 10_000): AcquireAttempt => ({ acquired: false, pttl });
const granted = (fencingToken: number): AcquireAttempt => ({ acquired: true, fencingToken });
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyQueue: one key, the callers of one process', () => {
  let emptied: number;
  const queue = (queueing = true) => {
    const q = new KeyQueue('lock:k', 10_000, queueing, () => emptied++);
    q.start();
    return q;
  };

  beforeEach(() => {
    emptied = 0;
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('lets only the head attempt, and the next one in line once the head holds the lock', async () => {
    const q = queue();
    const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
    q.add(a);
    q.add(b);
    expect([a.attempts, b.attempts]).toEqual([1, 0]);
    a.answer(granted(7));
    await settle();
    expect(a.events).toEqual([expect.stringMatching(/^acquired 7 from /)]);
    // In fair mode the new head takes its place in the store's line at once.
    expect(b.attempts).toBe(1);
  });

  it('renews the places of the callers behind the head while they wait, and only theirs', async () => {
    const kept: string[][] = [];
    const q = new KeyQueue(
      'lock:k',
      10_000,
      true,
      () => emptied++,
      (tokens) => kept.push(tokens),
    );
    q.start();
    const [a, b, c] = [new ScriptedWaiter('a'), new ScriptedWaiter('b'), new ScriptedWaiter('c')];
    q.add(a);
    jest.advanceTimersByTime(QUEUE_LEASE);
    expect(kept).toEqual([]);
    q.add(b);
    q.add(c);
    jest.advanceTimersByTime(QUEUE_LEASE);
    expect(kept).toEqual([
      ['b', 'c'],
      ['b', 'c'],
      ['b', 'c'],
    ]);
    a.answer(granted(1));
    await settle();
    kept.length = 0;
    jest.advanceTimersByTime(QUEUE_LEASE);
    expect(kept).toEqual([['c'], ['c'], ['c']]);
    q.drop(c, () => undefined);
    kept.length = 0;
    jest.advanceTimersByTime(QUEUE_LEASE);
    expect(kept).toEqual([]);
  });

  it('treats a turn announced for somebody else as no news, but looks again within the handover lease', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a');
    q.add(a);
    // Refused again and again, the fallback re-check backs off to about a second.
    for (let i = 0; i < 6; i++) {
      a.answer(refused());
      await settle();
      jest.advanceTimersByTime(1_300);
    }
    a.answer(refused());
    await settle();
    const before = a.attempts;
    q.heard({ type: 'turn', token: 'someone-else' });
    expect(a.attempts).toBe(before);
    // Should that waiter be dead, its reservation ends within the handover lease (500 ms).
    jest.advanceTimersByTime(502);
    expect(a.attempts).toBe(before + 1);
  });

  it('answers its own turn with an attempt, never by holding on the notice alone', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a');
    q.add(a);
    a.answer(refused());
    await settle();
    q.heard({ type: 'turn', token: 'a' });
    expect(a.events).toEqual([]);
    expect(a.attempts).toBe(2);
    a.answer(granted(9));
    await settle();
    expect(a.events).toEqual([expect.stringMatching(/^acquired 9 from /)]);
  });

  it('lets a caller behind the head take a turn announced for it (callers that started together all queued in the store)', async () => {
    const q = queue();
    const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
    q.add(a);
    q.add(b);
    a.answer(refused());
    await settle();
    q.heard({ type: 'turn', token: 'b' });
    expect(b.attempts).toBe(1);
    b.answer(granted(4));
    await settle();
    expect(b.events).toEqual([expect.stringMatching(/^acquired 4 from /)]);
    expect(a.events).toEqual([]);
  });

  describe('a turn that carries the grant (its fencing token)', () => {
    const queuedAt = (lastFence: number, pttl = 10_000): AcquireAttempt => ({
      acquired: false,
      pttl,
      lastFence,
    });

    /** Callers a and b in line, a's first attempt refused with a `lastFence` of 100. */
    const refusedAhead = async () => {
      const q = queue();
      const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
      q.add(a);
      q.add(b);
      a.answer(queuedAt(100));
      await settle();
      return { q, a, b };
    };

    it('makes a holder of a waiter whose last refusal came before it, with no attempt', async () => {
      const { q, a, b } = await refusedAhead();
      q.heard({ type: 'turn', token: 'a', fencingToken: 101 });
      expect(a.events).toEqual(['acquired 101 from 7 for 500']);
      expect(a.attempts).toBe(1);
      // The next caller in line takes its place in the store's line at once, as after a grant.
      expect(b.attempts).toBe(1);
    });

    it('leaves it to an attempt when the grant is not above the last refusal', async () => {
      const q = queue();
      const a = new ScriptedWaiter('a');
      q.add(a);
      a.answer(queuedAt(100));
      await settle();
      // An old notice, heard after a later refusal: the lock may be somebody else's by now.
      q.heard({ type: 'turn', token: 'a', fencingToken: 100 });
      expect(a.events).toEqual([]);
      expect(a.attempts).toBe(2);
    });

    it('lets the answer of the attempt on its way decide', async () => {
      const q = queue();
      const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
      q.add(a);
      q.add(b);
      q.heard({ type: 'turn', token: 'a', fencingToken: 50 });
      expect(a.events).toEqual([]);
      // Refused after the grant (the grant ran out and another took the lock): no holder.
      a.answer(queuedAt(60));
      await settle();
      expect(a.events).toEqual([]);
      expect(a.attempts).toBe(2);
      q.heard({ type: 'turn', token: 'a', fencingToken: 70 });
      // Refused before the grant: the refusal dates it.
      a.answer(queuedAt(65));
      await settle();
      expect(a.events).toEqual(['acquired 70 from 7 for 500']);
      expect(b.attempts).toBe(1);
    });

    it('lets the attempt on its way decide though a turn moved its caller from the head', async () => {
      const { q, a } = await refusedAhead();
      q.heard({ type: 'released' }); // prompts a's next attempt
      expect(a.attempts).toBe(2);
      // A turn b cannot date moves it ahead of a, whose attempt is still on its way.
      q.heard({ type: 'turn', token: 'b', fencingToken: 5 });
      q.heard({ type: 'turn', token: 'a', fencingToken: 101 });
      expect(a.events).toEqual([]);
      // That attempt ran after the grant and found the lock a's: the grant is its answer, and
      // nothing gives the lock back.
      a.answer(granted(102));
      await settle();
      expect(a.events).toEqual([expect.stringMatching(/^acquired 102 from /)]);
    });

    it('leaves the head’s fallback re-check as it was when a caller behind it holds from a notice', async () => {
      const { q, a, b } = await refusedAhead();
      b.queuedBefore(100);
      jest.advanceTimersByTime(30);
      q.heard({ type: 'turn', token: 'b', fencingToken: 101 });
      expect(b.events).toEqual(['acquired 101 from 7 for 500']);
      // The head's re-check, armed at its refusal (50 ms, jittered up to 62.5 ms), still runs.
      jest.advanceTimersByTime(40);
      expect(a.attempts).toBe(2);
    });

    it('serves a caller behind the head without disturbing the head', async () => {
      const { q, a, b } = await refusedAhead();
      q.heard({ type: 'turn', token: 'b', fencingToken: 120 });
      // b made no attempt here, so nothing dates the grant: it asks.
      expect(b.attempts).toBe(1);
      b.answer(queuedAt(130));
      await settle();
      q.heard({ type: 'turn', token: 'b', fencingToken: 140 });
      expect(b.events).toEqual(['acquired 140 from 7 for 500']);
      expect(a.events).toEqual([]);
    });
  });

  it('keeps the turn of a caller that another turn passed until it has tried, though that other one is refused', async () => {
    const q = queue();
    const [a, b, c] = [new ScriptedWaiter('a'), new ScriptedWaiter('b'), new ScriptedWaiter('c')];
    for (const waiter of [a, b, c]) q.add(waiter);
    q.heard({ type: 'turn', token: 'b' });
    q.heard({ type: 'turn', token: 'c' });
    a.answer(refused());
    await settle();
    c.answer(refused()); // still behind b in the store's line
    await settle();
    expect(b.attempts).toBe(1);
    b.answer(granted(5));
    await settle();
    expect(b.events).toEqual([expect.stringMatching(/^acquired 5 from /)]);
  });

  it('puts a caller whose turn came before it joined first, though others of its process wait', async () => {
    const q = queue();
    const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
    q.add(a);
    a.answer(refused());
    await settle();
    q.heard({ type: 'turn', token: 'b' }); // its first attempt's answer is on its way
    q.add(b, q.releases);
    expect(b.attempts).toBe(1);
    expect(q.waiters[0]).toBe(b);
  });

  it('follows a turn heard while an attempt was on its way with another attempt', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a');
    q.add(a);
    q.heard({ type: 'turn', token: 'a' });
    a.answer(refused()); // sent before the lock was reserved for it
    await settle();
    expect(a.attempts).toBe(2);
  });

  it('needs no attempt from a caller that queued with nothing heard since its first attempt', () => {
    const q = queue();
    q.heard({ type: 'turn', token: 'someone-else' });
    const heard = q.releases;
    const a = new ScriptedWaiter('a');
    q.add(a, heard);
    expect(a.attempts).toBe(0);
    // Its own turn, announced between its first attempt and joining the line, is news.
    const b = new ScriptedWaiter('b');
    const q2 = queue();
    const heard2 = q2.releases;
    q2.heard({ type: 'turn', token: 'b' });
    q2.add(b, heard2);
    expect(b.attempts).toBe(1);
  });

  it('hands a release of this process to the waiter it names, and ignores that waiter’s late attempt', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a');
    const b = new ScriptedWaiter('b');
    q.add(a);
    q.add(b);
    expect(q.handOver('a', 11, 123)).toBe(true);
    expect(a.events).toEqual(['acquired 11 from 123']);
    a.answer(granted(12)); // its attempt ran after the handover: the same lock, not a second
    await settle();
    expect(a.events).toEqual(['acquired 11 from 123']);
    expect(b.attempts).toBe(1);
    expect(q.handOver('gone', 1, 1)).toBe(false);
  });

  it('keeps a head whose grant came after its validity first in line, and asks again at once', async () => {
    const q = queue();
    const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
    q.add(a);
    q.add(b);
    a.tooLate = true;
    a.answer(granted(3));
    await settle();
    // Not a holder on that answer, not failed either: it asked again from its place.
    expect(a.events).toEqual([]);
    expect([a.attempts, b.attempts]).toEqual([2, 0]);
    a.tooLate = false;
    a.answer(granted(4));
    await settle();
    expect(a.events).toEqual([expect.stringMatching(/^acquired 4 from /)]);
    expect(b.attempts).toBe(1);
  });

  it('fails a caller whose grants all came late with that error when its deadline comes', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a', performance.now() + 100);
    q.add(a);
    a.tooLate = true;
    a.answer(granted(1));
    await settle();
    jest.advanceTimersByTime(200);
    expect(a.events).toEqual(['failed LockConnectionError: Lock "k": the answer came too late']);
  });

  it('puts a caller whose first grant came too late at the head, where its next attempt renews it', async () => {
    const q = queue();
    const [a, late] = [new ScriptedWaiter('a'), new ScriptedWaiter('late')];
    q.add(a);
    a.answer(refused());
    await settle();
    q.add(late, undefined, new LockConnectionError('k', 'the answer came too late'));
    expect(q.waiters.map((w) => w.token)).toEqual(['late', 'a']);
    expect([a.attempts, late.attempts]).toEqual([1, 1]);
  });

  it('lets a caller whose first grant came too late ask before a caller owed a turn', async () => {
    const q = queue();
    const [a, x, late] = [
      new ScriptedWaiter('a'),
      new ScriptedWaiter('x'),
      new ScriptedWaiter('late'),
    ];
    q.add(a);
    q.add(x);
    q.heard({ type: 'turn', token: 'x' }); // while a's attempt is on its way
    q.add(late, undefined, new LockConnectionError('k', 'the answer came too late'));
    a.answer(refused());
    await settle();
    // Its token may hold the lock (on ZooKeeper its node is first in line): were x to ask
    // first, x would be refused behind it for as long as it waits.
    expect(late.attempts).toBe(1);
    expect(x.attempts).toBe(0);
    late.answer(granted(3));
    await settle();
    expect(late.events).toEqual([expect.stringMatching(/^acquired 3 from /)]);
    expect(x.attempts).toBe(1);
  });

  it('fails a caller whose first grant came too late with that error when no later attempt was answered by its deadline', async () => {
    const q = queue();
    const late = new ScriptedWaiter('late', performance.now() + 100);
    q.add(late, undefined, new LockConnectionError('k', 'the answer came too late'));
    expect(late.attempts).toBe(1);
    jest.advanceTimersByTime(200);
    expect(late.events).toEqual(['failed LockConnectionError: Lock "k": the answer came too late']);
  });

  it('answers a handover whose release came back after the validity with an attempt of the waiter it names', async () => {
    const q = queue();
    const [a, b] = [new ScriptedWaiter('a'), new ScriptedWaiter('b')];
    q.add(a);
    q.add(b);
    a.answer(refused());
    await settle();
    b.tooLate = true;
    expect(q.handOver('b', 9, 1)).toBe(true);
    expect(b.events).toEqual([]);
    // b goes first and asks at once: its attempt renews the lock if it is still b's.
    expect(b.attempts).toBe(1);
    expect(q.waiters.map((w) => w.token)).toEqual(['b', 'a']);
    b.tooLate = false;
    b.answer(granted(10));
    await settle();
    expect(b.events).toEqual([expect.stringMatching(/^acquired 10 from /)]);
  });

  it('drops a caller that leaves, and tells one whose attempt succeeded too late to give it back', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a');
    const b = new ScriptedWaiter('b');
    q.add(a);
    q.add(b);
    const left: string[] = [];
    expect(q.drop(a, () => left.push('a'))).toBe(true);
    expect(left).toEqual(['a']);
    a.answer(granted(5));
    await settle();
    expect(a.events).toEqual(['abandoned']);
    expect(b.attempts).toBe(1);
  });

  it('times a caller out at its deadline with what the last attempt learnt', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a', performance.now() + 1_000);
    q.add(a);
    a.answer(refused(4_000));
    await settle();
    jest.advanceTimersByTime(1_001);
    expect(a.events).toEqual(['timed out (pttl 4000)']);
    expect(emptied).toBe(1);
  });

  it('keeps a head whose attempt could not reach the store in line, trying again, and fails it with that error if its deadline comes first', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a', performance.now() + 3_000);
    const b = new ScriptedWaiter('b');
    q.add(a);
    q.add(b);
    const unreachable = new LockConnectionError('lock:k', 'acquire got no answer');
    a.fail(unreachable);
    await settle();
    expect(a.events).toEqual([]);
    // It tries again after the fallback delay, not at once, and keeps its place ahead of b.
    expect(a.attempts).toBe(1);
    jest.advanceTimersByTime(1_000);
    expect([a.attempts, b.attempts]).toEqual([2, 0]);
    a.fail(unreachable);
    await settle();
    jest.advanceTimersByTime(2_001);
    expect(a.events).toEqual([`failed ${String(unreachable)}`]);
    // Its third try was on its way at the deadline; once it ends, b goes on.
    expect(a.attempts).toBe(3);
    a.fail(unreachable);
    await settle();
    expect(b.attempts).toBe(1);
  });

  it('fails a head at once on an error that is not about reaching the store', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a', performance.now() + 3_000);
    q.add(a);
    const conflict = new LockKindError('lock:k', 'a semaphore of 2', 'a mutex');
    a.fail(conflict);
    await settle();
    expect(a.events).toEqual([`failed ${String(conflict)}`]);
  });

  it('times a caller out as a conflict once another attempt got through, though its own last one did not', async () => {
    const q = queue();
    const a = new ScriptedWaiter('a', performance.now() + 3_000);
    const b = new ScriptedWaiter('b');
    q.add(a);
    q.add(b);
    a.fail(new LockConnectionError('lock:k', 'acquire got no answer'));
    await settle();
    // b's turn: it goes first, and the store answers it; a tries again, and is still waiting
    // for that answer when its deadline comes.
    q.heard({ type: 'turn', token: 'b' });
    b.answer(granted(9));
    await settle();
    expect(a.attempts).toBe(2);
    jest.advanceTimersByTime(3_001);
    expect(a.events).toEqual(['timed out (pttl -1)']);
  });
});
