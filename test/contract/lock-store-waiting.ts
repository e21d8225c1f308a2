import type { LockStore } from '../../src/index.js';
import { HANDOVER_LEASE, QUEUE_LEASE } from '../../src/store/lock-store.interface.js';
import { until } from '../support/backends.js';
import { sleep } from '../support/lock-app.js';
import {
  BOUND,
  fenceOf,
  gaveUp,
  Heard,
  refusalOf,
  token,
  waitsOn,
  type StoreContract,
} from './lock-store-harness.js';

/**
 * Waiting for a key: the line of a store that keeps one (`capabilities.queueing`), its leases
 * (for a store whose holds live by a TTL) or its sessions, and a store without a line.
 */
export function waitingCases(ctx: StoreContract): void {
  it('serves queued waiters first come first served, each told its turn after the release before it; without a line, takes no place and announces the release', async () => {
    await (ctx.can.queueing ? firstComeFirstServed(ctx) : noLine(ctx));
  });

  it('drops the place of a queued caller that stops attempting after QUEUE_LEASE, serving the waiter behind it first; a session keeps it until it ends', async () => {
    // A store without a line keeps no place to drop: see the case above.
    if (!ctx.can.queueing) return;
    await (ctx.can.keepAlive === 'ttl' ? placeLapses(ctx) : placeLivesWithSession(ctx));
  });

  it('lets a turn that its waiter never takes up lapse after HANDOVER_LEASE: the next waiter, or a newcomer, then takes the key', async () => {
    // A session store hands the key over as its waiter's node comes first, for as long as that
    // session lives (see the case above); a store without a line hands nothing over.
    if (!ctx.can.queueing || ctx.can.keepAlive !== 'ttl') return;
    await turnLapses(ctx);
  });
}

/**
 * The line of a store that keeps one: a release naming a successor (a waiter of the releaser's
 * own process) gives it the key at once when it heads the line, and otherwise the head's turn
 * comes first.
 */
export function successorCases(ctx: StoreContract): void {
  it('hands the key at once to a successor of the releaser’s store that heads the line, for its own TTL; a successor behind another waiter waits its turn', async () => {
    // A store without a line serves no waiter first: there is nobody to hand the key to.
    if (!ctx.can.queueing) return;
    await successors(ctx);
  });
}

interface Waiter {
  store: LockStore;
  token: string;
}

async function firstComeFirstServed(ctx: StoreContract): Promise<void> {
  const { a, b } = ctx;
  const c = await ctx.open();
  const key = ctx.key('line');
  const ttl = ctx.longTtl;
  const waiters: Waiter[] = [b, c, b].map((store) => ({ store, token: token() }));
  // What each store's subscriber hears (a store may tell only its own waiters of their turns),
  // and all they hear, in the order it comes.
  const [heard, all] = [new Map([b, c].map((store) => [store, new Heard()])), new Heard()];
  for (const store of [b, c]) {
    await ctx.listen(store, key, heard.get(store));
    await ctx.listen(store, key, all);
  }
  const turnsHeard = () => all.turns();
  const holder = token();
  let previous = await ctx.take(a, key, holder, ttl);
  for (const [i, waiter] of waiters.entries()) {
    refusalOf(await waiter.store.acquire(key, waiter.token, ttl, true, waitsOn));
    await ctx.waitingIs(key, i + 1);
  }
  let releaser: Waiter = { store: a, token: holder };
  for (const [i, waiter] of waiters.entries()) {
    expect(turnsHeard()).toEqual(waiters.slice(0, i).map((each) => each.token));
    expect(await releaser.store.release(key, releaser.token)).toEqual({ released: true });
    // The next turn anybody hears is this waiter's.
    await until(async () => turnsHeard().length > i, BOUND);
    expect(turnsHeard()).toEqual(waiters.slice(0, i + 1).map((each) => each.token));
    await heard.get(waiter.store)!.turnOf(waiter.token);
    // The key is the waiter's to take: a newcomer is refused meanwhile.
    refusalOf(await a.acquire(key, token(), ttl, false, gaveUp));
    const taken = fenceOf(await waiter.store.acquire(key, waiter.token, ttl, true, waitsOn));
    expect(taken).toBeGreaterThan(previous);
    await ctx.waitingIs(key, waiters.length - i - 1);
    [previous, releaser] = [taken, waiter];
  }
  expect(turnsHeard()).toEqual(waiters.map((each) => each.token));
  expect(await releaser.store.release(key, releaser.token)).toEqual({ released: true });
}

async function noLine(ctx: StoreContract): Promise<void> {
  const { a, b, backend } = ctx;
  const key = ctx.key('line');
  const ttl = ctx.longTtl;
  const [holder, waiter] = [token(), token()];
  await ctx.take(a, key, holder, ttl);
  const heard = await ctx.listen(b, key);
  // The engine asks a store without a line to queue nobody (`queue` false).
  refusalOf(await b.acquire(key, waiter, ttl, false, waitsOn));
  expect(await backend.waiting(key)).toBe(0);
  if (b.inspect) expect((await b.inspect(key)).waiting).toBe(0);
  expect(await a.release(key, holder)).toEqual({ released: true });
  await heard.hears((event) => event.type === 'released');
  expect(heard.turns()).toEqual([]);
  fenceOf(await b.acquire(key, waiter, ttl, false, waitsOn));
  expect(await b.release(key, waiter)).toEqual({ released: true });
}

async function placeLapses(ctx: StoreContract): Promise<void> {
  const { a, b } = ctx;
  const c = await ctx.open();
  const key = ctx.key('lapsed');
  const ttl = ctx.longTtl;
  const [holder, idle, kept] = [token(), token(), token()];
  const [heardB, heardC] = [await ctx.listen(b, key), await ctx.listen(c, key)];
  await ctx.take(a, key, holder, ttl);
  const queuedAt = performance.now();
  refusalOf(await b.acquire(key, idle, ttl, true, waitsOn));
  refusalOf(await c.acquire(key, kept, ttl, true, waitsOn));
  await ctx.waitingIs(key, 2);
  // The attempts of a waiter renew its place, as a waiting caller's re-checks do; the idle
  // caller makes none.
  ctx.every(1_000, async () => {
    refusalOf(await c.acquire(key, kept, ttl, true, waitsOn));
  });
  const inspect = a.inspect?.bind(a);
  if (inspect) {
    // Live places, as the store counts them: the idle caller's lapses, not before its lease.
    await until(async () => (await inspect(key)).waiting === 1, BOUND);
    expect(performance.now() - queuedAt).toBeGreaterThanOrEqual(QUEUE_LEASE - 100);
  } else {
    await sleep(QUEUE_LEASE + 500);
  }
  expect(await a.release(key, holder)).toEqual({ released: true });
  await heardC.turnOf(kept);
  fenceOf(await c.acquire(key, kept, ttl, true, waitsOn));
  expect([...heardB.turns(), ...heardC.turns()]).not.toContain(idle);
  // The idle caller that comes back lines up again, at the back.
  refusalOf(await b.acquire(key, idle, ttl, true, waitsOn));
  await ctx.waitingIs(key, 1);
  expect(await c.release(key, kept)).toEqual({ released: true });
  await heardB.turnOf(idle);
  fenceOf(await b.acquire(key, idle, ttl, true, waitsOn));
  expect(await b.release(key, idle)).toEqual({ released: true });
  await ctx.waitingIs(key, 0);
}

async function placeLivesWithSession(ctx: StoreContract): Promise<void> {
  const { a, b } = ctx;
  const c = await ctx.open();
  const key = ctx.key('lapsed');
  const ttl = ctx.longTtl;
  const [holder, idle, kept] = [token(), token(), token()];
  const heardC = await ctx.listen(c, key);
  await ctx.take(a, key, holder, ttl);
  refusalOf(await b.acquire(key, idle, ttl, true, waitsOn));
  refusalOf(await c.acquire(key, kept, ttl, true, waitsOn));
  await ctx.waitingIs(key, 2);
  await sleep(QUEUE_LEASE + 500);
  expect(await ctx.backend.waiting(key)).toBe(2);
  if (a.inspect) expect((await a.inspect(key)).waiting).toBe(2);
  // The idle caller's session ends with its store: its place goes with it.
  await ctx.close(b);
  await ctx.waitingIs(key, 1);
  expect(await a.release(key, holder)).toEqual({ released: true });
  await heardC.turnOf(kept);
  fenceOf(await c.acquire(key, kept, ttl, true, waitsOn));
  expect(await c.release(key, kept)).toEqual({ released: true });
  await ctx.waitingIs(key, 0);
}

async function turnLapses(ctx: StoreContract): Promise<void> {
  const { a, b } = ctx;
  const c = await ctx.open();
  const key = ctx.key('handover');
  const ttl = ctx.longTtl;
  const [holder, absent, next] = [token(), token(), token()];
  const heardB = await ctx.listen(b, key);
  await ctx.take(a, key, holder, ttl);
  refusalOf(await b.acquire(key, absent, ttl, true, waitsOn));
  refusalOf(await c.acquire(key, next, ttl, true, waitsOn));
  await ctx.waitingIs(key, 2);
  expect(await a.release(key, holder)).toEqual({ released: true });
  await heardB.turnOf(absent);
  // Reserved for the absent waiter, for HANDOVER_LEASE at most.
  const { pttl } = refusalOf(await c.acquire(key, next, ttl, true, waitsOn));
  expect([pttl, pttl > 0 && pttl <= HANDOVER_LEASE]).toEqual([pttl, true]);
  let attempt = await c.acquire(key, next, ttl, true, waitsOn);
  for (const deadline = performance.now() + BOUND; !attempt.acquired;) {
    if (performance.now() > deadline) break;
    await sleep(20);
    attempt = await c.acquire(key, next, ttl, true, waitsOn);
  }
  expect(fenceOf(attempt)).toBeGreaterThan(0);
  // The absent waiter comes too late: the key is another's.
  refusalOf(await b.acquire(key, absent, ttl, false, gaveUp));
  expect(await c.release(key, next)).toEqual({ released: true });
  // A lapsed turn with nobody else in line: a newcomer takes the key.
  const [again, late, newcomer] = [token(), token(), token()];
  await ctx.take(a, key, again, ttl);
  refusalOf(await b.acquire(key, late, ttl, true, waitsOn));
  expect(await a.release(key, again)).toEqual({ released: true });
  await heardB.turnOf(late);
  refusalOf(await a.acquire(key, newcomer, ttl, false, gaveUp));
  await ctx.takeOnceFree(a, key, newcomer, ttl);
  expect(await a.release(key, newcomer)).toEqual({ released: true });
  await ctx.waitingIs(key, 0);
}

async function successors(ctx: StoreContract): Promise<void> {
  const { a, b, can } = ctx;
  const key = ctx.key('successor');
  const ttl = ctx.longTtl;
  const [holder, successor, other, behind] = [token(), token(), token(), token()];
  const [heardA, heardB] = [await ctx.listen(a, key), await ctx.listen(b, key)];
  const fence = await ctx.take(a, key, holder, ttl);
  refusalOf(await a.acquire(key, successor, ttl, true, waitsOn));
  await ctx.waitingIs(key, 1);
  const outcome = await a.release(key, holder, successor);
  expect(outcome.released).toBe(true);
  let held = outcome.successorFencingToken;
  if (held !== undefined) {
    // It holds from the release on, with the TTL it asked for, not a handover's lease.
    const [hold] = (await b.inspect?.(key))?.holders ?? [];
    if (b.inspect) expect(hold).toMatchObject({ token: successor, fencingToken: held });
    if (b.inspect && can.keepAlive === 'ttl') expect(hold.ttlMs).toBeGreaterThan(HANDOVER_LEASE);
    expect(await a.renew([{ key, token: successor, ttl, fencingToken: held }])).toEqual([true]);
  } else {
    // A store that does not hand over in the release lets the successor's next attempt take it.
    held = fenceOf(await a.acquire(key, successor, ttl, true, waitsOn));
  }
  expect(held).toBeGreaterThan(fence);
  refusalOf(await b.acquire(key, token(), ttl, false, gaveUp));
  // Now the releaser's own waiter is behind another store's: that one is served first.
  refusalOf(await b.acquire(key, other, ttl, true, waitsOn));
  refusalOf(await a.acquire(key, behind, ttl, true, waitsOn));
  await ctx.waitingIs(key, 2);
  expect(await a.release(key, successor, behind)).toEqual({ released: true });
  await heardB.turnOf(other);
  fenceOf(await b.acquire(key, other, ttl, true, waitsOn));
  expect([...heardA.turns(), ...heardB.turns()]).not.toContain(behind);
  expect(await b.release(key, other)).toEqual({ released: true });
  await heardA.turnOf(behind);
  fenceOf(await a.acquire(key, behind, ttl, true, waitsOn));
  expect(await a.release(key, behind)).toEqual({ released: true });
  await ctx.waitingIs(key, 0);
}
