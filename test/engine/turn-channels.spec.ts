import { newToken, ownerMark } from '../../src/engine/token.js';
import { contractFixtures, type ContractFixture } from '../contract/contract-backends.js';
import {
  fenceOf,
  Heard,
  refusalOf,
  StoreContract,
  waitsOn,
} from '../contract/lock-store-harness.js';
import { sleep } from '../support/lock-app.js';
import { byTier } from '../support/tiers.js';

/** The Redis and Valkey backends of the store contract (RedLock keeps no line). */
const isRedis = ([name]: ContractFixture) => /^(Redis|Valkey)\b/.test(name);
const redisFixtures = {
  quick: contractFixtures.quick.filter(isRedis),
  all: contractFixtures.all.filter(isRedis),
};

/** Two app instances' owner marks: what their callers' tokens end with. */
const [A, B] = [ownerMark('app-a:1'), ownerMark('app-b:{2}')];

/** The kinds whose handovers are announced: a mutex, and a semaphore of one permit. */
const kinds = [
  ['a mutex', ''],
  ['a semaphore', 's1.'],
] as const;

/**
 * In fair mode, the Redis scripts announce a queued waiter's turn on the turn channel of the
 * instance its token names, in the lock's hash slot: a handover wakes the process whose caller
 * is next, not every process that waits for the key. Two stores stand for two app instances,
 * each subscribed to the key with its own instance.
 */
describe.each(byTier(redisFixtures))('turns on %s', (_, start) => {
  const ctx = StoreContract.on(start);

  /** Subscribes `heard` on `ctx.a` as instance A and on `ctx.b` as instance B. */
  const listen = async (key: string) => {
    const [heardA, heardB] = [new Heard(), new Heard()];
    ctx.defer(await ctx.a.subscribe(key, heardA.listener, A));
    ctx.defer(await ctx.b.subscribe(key, heardB.listener, B));
    return [heardA, heardB];
  };

  /** Queues `waiter` for `key` on `store`, refused while the key is held. */
  const queue = async (store: 'a' | 'b', key: string, waiter: string) => {
    refusalOf(await ctx[store].acquire(key, waiter, ctx.longTtl, true, waitsOn));
  };

  /** Takes up the turn `waiter` was told of, and lets go. */
  const takeUp = async (store: 'a' | 'b', key: string, waiter: string) => {
    fenceOf(await ctx[store].acquire(key, waiter, ctx.longTtl, true, waitsOn));
    expect(await ctx[store].release(key, waiter)).toEqual({ released: true });
  };

  describe.each(kinds)('of %s', (_kind, tag) => {
    it.each(['handover', '{user:1}:handover'])(
      'tells the turn of a waiter only to its own instance (key %s)',
      async (name) => {
        const key = ctx.key(name);
        const [heardA, heardB] = await listen(key);
        const [holder, nextB, thenA] = [newToken(tag, A), newToken(tag, B), newToken(tag, A)];
        await ctx.take(ctx.a, key, holder);
        await queue('b', key, nextB);
        await queue('a', key, thenA);
        expect(await ctx.a.release(key, holder)).toEqual({ released: true });
        await heardB.turnOf(nextB);
        // A message on the key's channel or on A's turn channel would reach A by now.
        await sleep(200);
        expect(heardA.events).toEqual([]);
        await takeUp('b', key, nextB);
        await heardA.turnOf(thenA);
        await sleep(200);
        expect([heardA.turns(), heardB.turns()]).toEqual([[thenA], [nextB]]);
        expect(heardA.events).toHaveLength(1);
        expect(heardB.events).toHaveLength(1);
        await takeUp('a', key, thenA);
      },
    );

    it("tells the turn of a token without an owner mark on the lock's channel, to every instance", async () => {
      const key = ctx.key('unmarked');
      const [heardA, heardB] = await listen(key);
      const [holder, waiter] = [newToken(tag, A), newToken(tag)];
      await ctx.take(ctx.a, key, holder);
      await queue('b', key, waiter);
      expect(await ctx.a.release(key, holder)).toEqual({ released: true });
      await Promise.all([heardA.turnOf(waiter), heardB.turnOf(waiter)]);
      await takeUp('b', key, waiter);
    });
  });
});
