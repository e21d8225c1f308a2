import { sleep } from '../support/lock-app.js';
import { expectPttl, gaveUp, token, type StoreContract } from './lock-store-harness.js';

/** Waits until `ms` after `since` (a `performance.now()`). */
const untilAfter = (since: number, ms: number) =>
  sleep(Math.max(0, since + ms - performance.now()));

/**
 * Holding a key: grants and refusals, fencing tokens, a holder's own attempt, release, renewal
 * and the TTL, on the stores of `ctx`.
 */
export function holdingCases(ctx: StoreContract): void {
  it('grants a free key with a fencing token, and refuses any other token while it is held, saying how long the hold lives', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('free');
    const [holder, other] = [token(), token()];
    const ttl = ctx.longTtl;
    await ctx.expectLocked(b, key, false);
    const fence = await ctx.take(a, key, holder, ttl);
    // Refused by the holder's store as by another: the store, not the client, decides.
    for (const store of [a, b])
      expectPttl(can, await store.acquire(key, other, ttl, false, gaveUp), ttl);
    await ctx.expectLocked(b, key, true);
    const seen = await b.inspect?.(key);
    if (seen) expect(seen).toMatchObject({ holders: [{ token: holder, fencingToken: fence }] });
    expect(await a.release(key, holder)).toEqual({ released: true });
    await ctx.expectLocked(b, key, false);
    expect(await ctx.take(b, key, other)).toBeGreaterThan(fence);
    expect(await b.release(key, other)).toEqual({ released: true });
  });

  it('issues fencing tokens that strictly increase across the grants of a key, from either store, and across keys that share a counter', async () => {
    // Keys with one hash tag share a fencing counter on every Redis topology (one per prefix
    // and slot); the other stores have one for a whole prefix or more (a memory space, a
    // table's sequence, the ensemble's zxid).
    const [one, two] = [ctx.key('{fenced}:one'), ctx.key('{fenced}:two')];
    const grants = [
      [ctx.a, one],
      [ctx.b, one],
      [ctx.a, two],
      [ctx.b, two],
      [ctx.b, one],
      [ctx.a, two],
    ] as const;
    const fences: number[] = [];
    for (const [store, key] of grants) {
      const holder = token();
      fences.push(await ctx.take(store, key, holder));
      expect(await store.release(key, holder)).toEqual({ released: true });
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
  });

  it('renews a hold when its own token asks again: a grant with a new fencing token, the TTL counted again', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('again');
    const [holder, other] = [token(), token()];
    const ttl = 1_500;
    const sent = performance.now();
    const first = await ctx.take(a, key, holder, ttl);
    await sleep(500);
    const again = await ctx.take(a, key, holder, ttl);
    // A session store's hold is its node, whose fencing token its creation gave: ZooKeeper
    // answers that token again, where the interface promises a new one (a divergence, reported).
    if (can.keepAlive === 'ttl') expect(again).toBeGreaterThan(first);
    else expect(again).toBeGreaterThanOrEqual(first);
    // Past the first grant's TTL, the hold lives on from the second attempt.
    await untilAfter(sent, ttl + 200);
    expectPttl(can, await b.acquire(key, other, ttl, false, gaveUp), ttl);
    expect(await a.release(key, holder)).toEqual({ released: true });
  });

  it('releases for its holder only: a stranger’s release and a second one answer released: false, and the holder keeps the key', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('released');
    const [holder, stranger] = [token(), token()];
    const ttl = ctx.longTtl;
    const fence = await ctx.take(a, key, holder, ttl);
    for (const store of [a, b]) {
      expect(await store.release(key, stranger)).toEqual({ released: false });
    }
    expectPttl(can, await b.acquire(key, stranger, ttl, false, gaveUp), ttl);
    expect(await a.renew([{ key, token: holder, ttl, fencingToken: fence }])).toEqual([true]);
    expect(await a.release(key, holder)).toEqual({ released: true });
    expect(await a.release(key, holder)).toEqual({ released: false });
    await ctx.expectLocked(b, key, false);
    expect(await ctx.take(b, key, stranger)).toBeGreaterThan(fence);
    expect(await b.release(key, stranger)).toEqual({ released: true });
  });

  it('renews each entry of one call on its own: true for a holder, whose hold outlives its first TTL, false for an evicted (its key taken by another), a released or an unknown token', async () => {
    const { a, b, can, backend } = ctx;
    const ttl = 1_500;
    const [held, evicted, released, unknown] = ['held', 'evicted', 'released', 'unknown'].map(
      (name) => ({ key: ctx.key(`renewed:${name}`), token: token() }),
    );
    const sent = performance.now();
    const fences: number[] = [];
    for (const lock of [held, evicted, released]) {
      fences.push(await ctx.take(a, lock.key, lock.token, ttl));
    }
    // The evicted token's key is free for anybody: another token takes it.
    await backend.evict(evicted.key, evicted.token);
    const next = token();
    expect(await ctx.take(b, evicted.key, next)).toBeGreaterThan(fences[1]);
    expect(await a.release(released.key, released.token)).toEqual({ released: true });
    await sleep(500);
    const entries = [held, evicted, released, unknown].map((lock, i) => ({
      ...lock,
      ttl,
      fencingToken: fences[i] ?? fences[0],
    }));
    expect(await a.renew(entries)).toEqual([true, false, false, false]);
    await untilAfter(sent, ttl + 200);
    expectPttl(can, await b.acquire(held.key, token(), ttl, false, gaveUp), ttl);
    // The evicted token's release finds it gone, and leaves the key to the token that took it.
    expect(await a.release(evicted.key, evicted.token)).toEqual({ released: false });
    expect(await b.release(evicted.key, next)).toEqual({ released: true });
    expect(await a.release(held.key, held.token)).toEqual({ released: true });
  });

  it('ends an unrenewed hold by its TTL and lets another token take the key; a session’s hold outlives its TTL until its store closes', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('expiring');
    const [holder, next] = [token(), token()];
    const ttl = 600;
    const fence = await ctx.take(a, key, holder, ttl);
    expectPttl(can, await b.acquire(key, next, ttl, false, gaveUp), ttl);
    if (can.keepAlive === 'session') {
      await sleep(3 * ttl);
      expectPttl(can, await b.acquire(key, next, ttl, false, gaveUp), ttl);
      expect(await a.renew([{ key, token: holder, ttl, fencingToken: fence }])).toEqual([true]);
      await ctx.close(a);
    }
    expect(await ctx.takeOnceFree(b, key, next, ttl)).toBeGreaterThan(fence);
    if (can.keepAlive === 'ttl') {
      expect(await a.renew([{ key, token: holder, ttl, fencingToken: fence }])).toEqual([false]);
      expect(await a.release(key, holder)).toEqual({ released: false });
    }
    expect(await b.release(key, next)).toEqual({ released: true });
  });
}
