import { jest } from '@jest/globals';
import { HeldLock, type LockOwner } from '../../src/engine/held-lock.js';
import { Watchdog } from '../../src/engine/watchdog.js';
import type { LockStore, RenewalEntry } from '../../src/store/lock-store.interface.js';

/**
 * The watchdog's schedule, on a store that answers as the test says: which locks each tick
 * renews, and when. (What renewing does in a real store is the engine specs' business.)
 */
class Store {
  /** The entries of each renewal call, in order. */
  readonly calls: (readonly RenewalEntry[])[] = [];
  answer: 'renewed' | 'never' | 'fails' | 'later' = 'renewed';
  /** Renewals that the test answers (`later`), in order. */
  readonly later: ((renewed: boolean[]) => void)[] = [];

  renew = (entries: readonly RenewalEntry[]): Promise<boolean[]> => {
    this.calls.push(entries);
    if (this.answer === 'never') return new Promise(() => undefined);
    if (this.answer === 'later') return new Promise((resolve) => this.later.push(resolve));
    if (this.answer === 'fails') return Promise.reject(new Error('no answer from the store'));
    return Promise.resolve(entries.map(() => true));
  };
}

const owner: LockOwner = {
  releaseLock: () => Promise.resolve(true),
  extendLock: () => Promise.resolve(true),
  handOffLock: () => Promise.reject(new Error('no hand-off in these specs')),
  driftOf: () => 0,
};

function grantOf(i: number, ttl: number) {
  return {
    name: `k${i}`,
    key: `k${i}`,
    token: `t${i}`,
    fencingToken: i,
    ttl,
    watchdog: true,
    validFrom: performance.now(),
  };
}

function heldLock(i: number, ttl: number): HeldLock {
  return new HeldLock(owner, grantOf(i, ttl));
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('Watchdog: a tick renews the locks that are due, and only those', () => {
  let store: Store;
  let lost: string[];
  let watchdog: Watchdog;

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask'] });
    store = new Store();
    lost = [];
    watchdog = new Watchdog(
      store as unknown as LockStore,
      (lock) => lost.push(lock.name),
      () => undefined,
    );
  });

  afterEach(() => {
    watchdog.stop();
    jest.useRealTimers();
  });

  it('renews a lock taken later in a tick of its own, without touching the others', async () => {
    const early = Array.from({ length: 5_000 }, (_, i) => heldLock(i, 30_000));
    for (const lock of early) watchdog.track(lock);
    jest.advanceTimersByTime(2_000);
    const late = heldLock(99_999, 3_000);
    watchdog.track(late);
    // The late lock is due 1 s after it was taken (at 3 s), the others at 10 s (5 s at the
    // earliest, when a tick may take them along).
    jest.advanceTimersByTime(1_000);
    await settle();
    expect(store.calls.map((entries) => entries.map((entry) => entry.key))).toEqual([['k99999']]);
  });

  it('renews many due locks in slices, each a batch of its own, all before their validity', async () => {
    for (let i = 0; i < 5_000; i++) watchdog.track(heldLock(i, 3_000));
    // Due at 1 s; each further slice of 125 in a later turn of the event loop (an immediate).
    jest.advanceTimersByTime(1_000);
    await settle();
    expect(store.calls.map((entries) => entries.length)).toEqual([125]);
    // (The fake clock runs one round of immediates per millisecond it advances.)
    await jest.advanceTimersByTimeAsync(50);
    expect(store.calls.map((entries) => entries.length)).toEqual(Array(40).fill(125));
    expect(new Set(store.calls.flat().map((entry) => entry.key)).size).toBe(5_000);
    // Replies are handled between timers, as they would be.
    await jest.advanceTimersByTimeAsync(10_000);
    expect(lost).toEqual([]);
    expect(watchdog.size).toBe(5_000);
  });

  it('sends the next slice when a reply comes, or 1 ms after the last at the latest', async () => {
    store.answer = 'later';
    for (let i = 0; i < 1_000; i++) watchdog.track(heldLock(i, 3_000));
    jest.advanceTimersByTime(1_000);
    expect(store.calls).toHaveLength(1);
    // A reply: the next slice follows after the event loop's I/O, not a timer.
    store.later[0](Array<boolean>(125).fill(true));
    await settle();
    jest.advanceTimersByTime(0);
    expect(store.calls).toHaveLength(2);
    // No reply: the next one still goes, 1 ms later.
    jest.advanceTimersByTime(1);
    expect(store.calls).toHaveLength(3);
  });

  it('ends locks whose validity ran out before their turn in slices too, lost ones counted', () => {
    // Taken long ago, never renewed (the process stalled): all 300 are past their validity.
    const validFrom = performance.now() - 10_000;
    for (let i = 0; i < 300; i++) {
      watchdog.track(new HeldLock(owner, { ...grantOf(i, 3_000), validFrom }));
    }
    jest.advanceTimersToNextTimer();
    expect(lost).toHaveLength(125);
    jest.advanceTimersToNextTimer();
    expect(lost).toHaveLength(250);
    jest.advanceTimersToNextTimer();
    expect(lost).toHaveLength(300);
    expect(store.calls).toEqual([]);
  });

  it('tells the locks of a renewal that never answers that they are lost, when their validity ends', async () => {
    store.answer = 'never';
    for (let i = 0; i < 3; i++) watchdog.track(heldLock(i, 3_000));
    jest.advanceTimersByTime(1_000);
    expect(store.calls).toHaveLength(1);
    expect(lost).toEqual([]);
    jest.advanceTimersByTime(2_000);
    expect(lost.sort()).toEqual(['k0', 'k1', 'k2']);
    expect(watchdog.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('counts an extend that got no answer as applied: the lock is valid only until the shorter TTL it asked for ends', async () => {
    const lock = heldLock(0, 30_000);
    watchdog.track(lock);
    store.answer = 'fails';
    await expect(watchdog.extend(lock, 1_000)).rejects.toThrow('no answer from the store');
    // The store may have applied it: the key may be gone 1 s after the extend was sent.
    await jest.advanceTimersByTimeAsync(1_000);
    expect(lost).toEqual(['k0']);
  });

  it('guards a lock that an extend shortened while its renewal was unanswered from its new end', async () => {
    const lock = heldLock(0, 3_000);
    watchdog.track(lock);
    store.answer = 'never';
    jest.advanceTimersByTime(1_000);
    expect(store.calls).toHaveLength(1);
    store.answer = 'renewed';
    await expect(watchdog.extend(lock, 1_200)).resolves.toBe(true);
    // Valid until 2.2 s now, not until the 3 s the unanswered batch's guard counts on.
    await jest.advanceTimersByTimeAsync(1_200);
    expect(lost).toEqual(['k0']);
  });

  it('lets no late answer to a renewal sent before an undecided extend lengthen the lock past the shorter TTL it asked for', async () => {
    const lock = heldLock(0, 3_000);
    watchdog.track(lock);
    store.answer = 'later';
    jest.advanceTimersByTime(1_000);
    expect(store.later).toHaveLength(1);
    jest.advanceTimersByTime(10);
    store.answer = 'fails';
    await expect(watchdog.extend(lock, 500)).rejects.toThrow('no answer from the store');
    // The renewal's answer comes after all; the store may have applied the extend after it.
    store.later[0]([true]);
    await jest.advanceTimersByTimeAsync(500);
    expect(lost).toEqual(['k0']);
  });

  it('lets no late answer to a renewal lengthen the lock past a shorter extend sent after it, though the extend ends after its current validity', async () => {
    const lock = heldLock(0, 3_000);
    watchdog.track(lock);
    store.answer = 'later';
    jest.advanceTimersByTime(1_000);
    expect(store.later).toHaveLength(1);
    // Valid until 3 s; the extend sent at 2.7 s ends at 3.2 s, after that. The renewal sent at
    // 1 s would make it 4 s, but the store applies the extend after it: the key goes at 3.2 s.
    jest.advanceTimersByTime(1_700);
    const extending = watchdog.extend(lock, 500);
    store.later[0]([true]);
    await jest.advanceTimersByTimeAsync(500);
    expect(lost).toEqual(['k0']);
    store.later[1]?.([true]);
    await extending.catch(() => undefined);
  });

  it('counts a shorter extend as applied from when it is sent, while its answer is on its way', async () => {
    const lock = heldLock(0, 30_000);
    watchdog.track(lock);
    store.answer = 'later';
    const extending = watchdog.extend(lock, 1_000);
    // The store may apply it at once and let the key go 1 s later, long before the answer.
    // The watchdog renews it as a lock of 1 s meanwhile; with that renewal unanswered too, the
    // lock is lost when the 1 s ends: its signal aborts then, not when the 30 s lock would
    // have been renewed next.
    await jest.advanceTimersByTimeAsync(1_000);
    expect(() => lock.throwIfLost()).toThrow('validity ended');
    expect(lost).toEqual(['k0']);
    expect(store.calls.map((entries) => entries[0].ttl)).toEqual([1_000, 1_000]);
    store.later[0]([true]);
    await expect(extending).resolves.toBe(false);
  });

  it('keeps no more queue entries than about twice its locks when short-lived locks come and go', () => {
    for (let i = 0; i < 20_000; i++) {
      const lock = heldLock(i, 30_000);
      watchdog.track(lock);
      watchdog.untrack(lock);
    }
    const queued = (watchdog as unknown as { due: { size: number } }).due.size;
    expect(queued).toBeLessThanOrEqual(1_025);
  });
});

describe('Watchdog: why a lock whose renewal found its token gone ended', () => {
  afterEach(() => jest.useRealTimers());

  it('says its validity ran out when the answer is read after it did, and that its token is gone otherwise', async () => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask'] });
    const store = new Store();
    store.answer = 'later';
    const reasons = new Map<string, string>();
    const watchdog = new Watchdog(
      store as unknown as LockStore,
      (lock, reason) => reasons.set(lock.name, reason),
      () => undefined,
    );
    const [inTime, starved] = [heldLock(1, 3_000), heldLock(2, 3_000)];
    watchdog.track(inTime);
    watchdog.track(starved);
    jest.advanceTimersByTime(1_000);
    expect(store.calls).toHaveLength(1);
    // The answer's callback runs after the validity of one of them ended, ahead of its timer.
    starved.validUntil = performance.now() - 1;
    store.later[0]([false, false]);
    await settle();
    watchdog.stop();
    expect(Object.fromEntries(reasons)).toEqual({
      k1: 'its token was gone or replaced in the store',
      k2: 'its validity ran out before a renewal was confirmed, and its token is gone from the store',
    });
  });
});
