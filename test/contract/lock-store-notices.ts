import type { LockEvent, LockStore } from '../../src/index.js';
import { newToken, ownerMark } from '../../src/engine/token.js';
import { sleep } from '../support/lock-app.js';
import {
  BOUND,
  fenceOf,
  Heard,
  refusalOf,
  token,
  waitsOn,
  type StoreContract,
} from './lock-store-harness.js';

/**
 * Subscriptions, `ping`, `close` and what a store leaves behind, on the stores of `ctx`.
 */
export function noticeCases(ctx: StoreContract): void {
  /**
   * Takes `key` on `ctx.a`, lets a waiter of `store` try (queueing where the store keeps a
   * line), and releases: what a subscriber of `store` hears is the waiter's turn, or the
   * release. Resolves once `heard` has heard it, and the waiter has taken the key and let go.
   */
  const releaseWithWaiter = async (store: LockStore, key: string, heard: Heard) => {
    const { a, can } = ctx;
    const [holder, waiter] = [token(), token()];
    await ctx.take(a, key, holder);
    refusalOf(await store.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    expect(await a.release(key, holder)).toEqual({ released: true });
    const expected = can.queueing ? { type: 'turn', token: waiter } : { type: 'released' };
    await heard.hears((event) => matches(event, expected));
    fenceOf(await store.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    expect(await store.release(key, waiter)).toEqual({ released: true });
  };

  it('tells a subscriber of a release right after its subscribe resolved: the turn of the waiter the key went to, or the release', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('noticed');
    const [holder, waiter] = [token(), token()];
    await ctx.take(a, key, holder);
    refusalOf(await b.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    const heard = await ctx.listen(b, key);
    expect(await a.release(key, holder)).toEqual({ released: true });
    await heard.hears(() => true);
    expect(heard.events[0]).toMatchObject(
      can.queueing ? { type: 'turn', token: waiter } : { type: 'released' },
    );
    fenceOf(await b.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    expect(await b.release(key, waiter)).toEqual({ released: true });
  });

  it('tells a subscriber that names its instance the turn of a caller of that instance, or the release', async () => {
    const { a, b, can } = ctx;
    const key = ctx.key('instance');
    const instance = ownerMark('contract:b');
    const [holder, waiter] = [token(), newToken('', instance)];
    const heard = new Heard();
    ctx.defer(await b.subscribe(key, heard.listener, instance));
    await ctx.take(a, key, holder);
    refusalOf(await b.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    expect(await a.release(key, holder)).toEqual({ released: true });
    const expected = can.queueing ? { type: 'turn', token: waiter } : { type: 'released' };
    await heard.hears((event) => matches(event, expected));
    fenceOf(await b.acquire(key, waiter, ctx.longTtl, can.queueing, waitsOn));
    expect(await b.release(key, waiter)).toEqual({ released: true });
  });

  it('stops telling a subscriber once it calls what subscribe resolved, while another subscriber goes on hearing', async () => {
    const { b } = ctx;
    const c = await ctx.open();
    const key = ctx.key('stopped');
    // One stopped beside a live subscription of its store, one that was its store's only one.
    const stopped = [new Heard(), new Heard()];
    const stops = [await b.subscribe(key, stopped[0].listener)];
    const witness = await ctx.listen(b, key);
    stops.push(await c.subscribe(key, stopped[1].listener));
    for (const stop of stops) stop();
    await releaseWithWaiter(b, key, witness);
    await releaseWithWaiter(b, key, witness);
    await sleep(100);
    expect(stopped.map((heard) => heard.events)).toEqual([[], []]);
  });

  it('ends its subscriptions when it closes: a release is heard by an open store’s subscriber, not by the closed one’s', async () => {
    const { b } = ctx;
    const c = await ctx.open();
    const key = ctx.key('closed');
    const closed = new Heard();
    await c.subscribe(key, closed.listener);
    const witness = await ctx.listen(b, key);
    await ctx.close(c);
    await releaseWithWaiter(b, key, witness);
    await sleep(100);
    expect(closed.events).toEqual([]);
  });

  it('answers a ping, not degraded', async () => {
    for (const store of [ctx.a, ctx.b]) {
      const answer = await store.ping();
      expect(answer).toEqual(expect.any(Object));
      expect(answer.degraded).toBeUndefined();
    }
  });

  it('leaves nothing under its prefix once every lock is released and every subscription ended', async () => {
    const { a, b, can, backend } = ctx;
    const key = ctx.key('residue');
    const ttl = ctx.longTtl;
    const [holder, waiter, quitter] = [token(), token(), token()];
    const stop = await b.subscribe(key, () => undefined);
    await ctx.take(a, key, holder, ttl);
    for (const caller of [waiter, quitter]) {
      refusalOf(await b.acquire(key, caller, ttl, can.queueing, waitsOn));
    }
    await ctx.waitingIs(key, can.queueing ? 2 : 0);
    // A waiter that gives up leaves the line with its release, which finds it holds nothing. A
    // session store deletes the waiter's node, and ZooKeeper answers released: true for it,
    // where the interface says not released (a divergence, reported; the engine ignores it).
    const gone = await b.release(key, quitter);
    if (can.keepAlive === 'ttl') expect(gone).toEqual({ released: false });
    await ctx.waitingIs(key, can.queueing ? 1 : 0);
    expect(await a.release(key, holder)).toEqual({ released: true });
    const fencingToken = fenceOf(await b.acquire(key, waiter, ttl, can.queueing, waitsOn));
    expect(await b.renew([{ key, token: waiter, ttl, fencingToken }])).toEqual([true]);
    expect(await b.release(key, waiter)).toEqual({ released: true });
    stop();
    let residue = await backend.residue(ctx.prefix);
    for (const deadline = performance.now() + BOUND; residue.length > 0;) {
      if (performance.now() > deadline) break;
      await sleep(20);
      residue = await backend.residue(ctx.prefix);
    }
    expect(residue).toEqual([]);
  });
}

/** Whether `event` has the fields of `expected`. */
function matches(event: LockEvent, expected: Record<string, unknown>): boolean {
  return Object.entries(expected).every(
    ([field, value]) => (event as Record<string, unknown>)[field] === value,
  );
}
