import { HANDOVER_LEASE, type LockEvent } from '../../src/store/lock-store.interface.js';
import { MemorySpace } from '../../src/store/memory/memory-space.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';

/**
 * The memory store hands a released mutex over as the Redis scripts do: the queued head gets it
 * with a fencing token, announced on the key, above the `lastFence` of every refusal before the
 * grant, so that a waiter can tell a notice of a grant that came after its attempt.
 */
describe('memory store: a handover by notice, as the Redis scripts make it', () => {
  it('grants the head with a fencing token above its refusal, announced with the notice', async () => {
    const store = new MemoryLockStore(true, new MemorySpace(), '');
    const events: LockEvent[] = [];
    const unsubscribe = await store.subscribe('k', (event) => events.push(event));
    const held = await store.acquire('k', 'holder', 10_000, false);
    if (!held.acquired) throw new Error('the free lock was refused');

    const refused = await store.acquire('k', 'waiter', 10_000, true);
    expect(refused).toEqual({
      acquired: false,
      pttl: expect.any(Number) as unknown,
      lastFence: expect.any(Number) as unknown,
    });
    const lastFence = refused.acquired ? -1 : (refused.lastFence ?? -1);
    expect(lastFence).toBeGreaterThanOrEqual(held.fencingToken);
    // A caller that does not queue learns nothing to date a notice with.
    expect(await store.acquire('k', 'other', 10_000, false)).toEqual({
      acquired: false,
      pttl: expect.any(Number) as unknown,
    });

    await store.release('k', 'holder');
    await Promise.resolve();
    expect(events).toHaveLength(1);
    const [turn] = events;
    if (turn.type !== 'turn') throw new Error(`announced ${turn.type}`);
    expect(turn.token).toBe('waiter');
    expect(turn.fencingToken).toBeGreaterThan(lastFence);
    const [hold] = (await store.inspect('k')).holders;
    expect(hold).toMatchObject({ token: 'waiter', fencingToken: turn.fencingToken });
    expect(hold.ttlMs).toBeLessThanOrEqual(HANDOVER_LEASE);

    // Its next attempt takes the lock with a TTL and a fencing token of its own.
    const taken = await store.acquire('k', 'waiter', 10_000, true);
    expect(taken).toEqual({ acquired: true, fencingToken: expect.any(Number) as unknown });
    expect(taken.acquired && taken.fencingToken).toBeGreaterThan(turn.fencingToken!);
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
