import { HANDOVER_LEASE, type LockEvent } from '../../src/store/lock-store.interface.js';
import { MemorySpace } from '../../src/store/memory/memory-space.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';

/**
 * The memory store hands a released mutex over as the Redis scripts do: the queued head gets it
 * reserved for the handover lease, announced as its turn; its next attempt takes it.
 */
describe('memory store: a handover, as the Redis scripts make it', () => {
  it('reserves the lock for the head, announces its turn, and lets its next attempt take it', async () => {
    const store = new MemoryLockStore(true, new MemorySpace(), '');
    const events: LockEvent[] = [];
    const unsubscribe = await store.subscribe('k', (event) => events.push(event));
    const held = await store.acquire('k', 'holder', 10_000, false);
    if (!held.acquired) throw new Error('the free lock was refused');
    expect(await store.acquire('k', 'waiter', 10_000, true)).toEqual({
      acquired: false,
      pttl: expect.any(Number) as unknown,
    });

    await store.release('k', 'holder');
    await Promise.resolve();
    expect(events).toEqual([{ type: 'turn', token: 'waiter' }]);
    const [hold] = (await store.inspect('k')).holders;
    expect(hold).toMatchObject({ token: 'waiter', fencingToken: expect.any(Number) as unknown });
    expect(hold.ttlMs).toBeLessThanOrEqual(HANDOVER_LEASE);
    // Reserved: a newcomer is refused.
    expect((await store.acquire('k', 'other', 10_000, false)).acquired).toBe(false);

    // Its next attempt takes the lock with a TTL and a fencing token of its own.
    const taken = await store.acquire('k', 'waiter', 10_000, true);
    expect(taken).toEqual({ acquired: true, fencingToken: expect.any(Number) as unknown });
    expect(taken.acquired && taken.fencingToken).toBeGreaterThan(hold.fencingToken!);
    expect((await store.inspect('k')).holders[0].ttlMs).toBeGreaterThan(HANDOVER_LEASE);
    unsubscribe();
  });

  it('tells a turn only to the subscribers of the instance whose token it names', async () => {
    const store = new MemoryLockStore(true, new MemorySpace(), '');
    const heard = { a: [] as LockEvent[], b: [] as LockEvent[], any: [] as LockEvent[] };
    const stops = [
      await store.subscribe('k', (event) => heard.a.push(event), '@a'),
      await store.subscribe('k', (event) => heard.b.push(event), '@b'),
      await store.subscribe('k', (event) => heard.any.push(event)),
    ];
    await store.acquire('k', 'holder@a', 10_000, true);
    await store.acquire('k', 'waiter@b', 10_000, true);
    await store.acquire('k', 'unmarked', 10_000, true);
    await store.release('k', 'holder@a');
    await Promise.resolve();
    const turn = { type: 'turn', token: 'waiter@b' };
    expect([heard.a, heard.b, heard.any]).toEqual([
      [],
      [expect.objectContaining(turn)],
      [expect.objectContaining(turn)],
    ]);
    // A token that names no instance reaches everybody.
    await store.acquire('k', 'waiter@b', 10_000, true);
    await store.release('k', 'waiter@b');
    await Promise.resolve();
    expect(heard.a).toEqual([expect.objectContaining({ type: 'turn', token: 'unmarked' })]);
    for (const stop of stops) stop();
  });
});
