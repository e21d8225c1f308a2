import { setTimeout as delay } from 'node:timers/promises';
import {
  LockKeyResolutionError,
  LockLostError,
  LockNotAcquiredError,
  LockOptionsError,
  StaleFencingTokenError,
  type AcquireOptions,
  type Lock,
  type LockHandle,
  type LockHolder,
  type LockModuleOptions,
  type LockStore,
} from '../../src/index.js';
import { LOCK_ENGINE } from '../../src/lock.constants.js';
import type { LockStoreCapabilities } from '../../src/store/capabilities.js';
import { until } from '../support/backends.js';
import { aborted, bootLockApp, sleep, uniquePrefix, type LockApp } from '../support/lock-app.js';
import { byTier } from '../support/tiers.js';
import { contractFixtures, type ContractBackend } from './contract-backends.js';

/** How long a test looks for a state it cannot await before it fails, in ms. */
const BOUND = 10_000;

/**
 * The behaviours every backend owes, written once. What a backend does not do is read from the
 * capabilities its store declares, never from a table here: where it declares it cannot, the
 * test asserts that asking for it is refused with a LockOptionsError naming the option and the
 * backend; where it declares it can, it is held to it.
 */
describe.each(byTier(contractFixtures))('the store contract on %s', (_, start) => {
  let backend: ContractBackend;
  let prefix: string;
  let apps: LockApp[] = [];
  /** Two app instances of the test's prefix, each with its own module and connections. */
  let a: LockApp;
  let b: LockApp;
  let can: LockStoreCapabilities;

  const boot = async (extra: LockModuleOptions = {}) => {
    const app = await bootLockApp({ ...backend.options(prefix), waitTimeout: 10_000, ...extra });
    apps.push(app);
    return app;
  };
  const closeApps = async () => {
    const closing = apps;
    apps = [];
    await Promise.all(closing.map((app) => app.close()));
  };
  /**
   * A call left running while the test awaits something else: its rejection is the test's to
   * see when it awaits the call, not an unhandled one that would end the run.
   */
  const pending = <T>(call: Promise<T>): Promise<T> => {
    call.catch(() => undefined);
    return call;
  };
  /** Expects `attempt` to be refused for `option`, in a message that names the backend. */
  const expectRefused = async (attempt: Promise<unknown>, option: string) => {
    const error: unknown = await attempt.then(
      () => new Error(`${option} was not refused`),
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(LockOptionsError);
    const names: unknown = expect.stringContaining(can.backend);
    expect(error).toMatchObject({ option, message: names });
  };

  beforeAll(async () => {
    backend = await start();
  }, 60_000);

  beforeEach(async () => {
    prefix = uniquePrefix();
    [a, b] = [await boot(), await boot()];
    // Connected before the test starts its clocks: what is timed is the contract, not how long
    // a client takes to connect (a node-redis Sentinel client finds its master in ~1 s on a
    // loaded machine, and a RedLock master may not answer a fresh connection's first command
    // within its 250 ms bound, so the first look is asked again until it is answered).
    const answered = (app: LockApp) => () =>
      app.locks.isLocked('connected').then(
        () => true,
        () => false,
      );
    await Promise.all([a, b].map((app) => until(answered(app), BOUND)));
    can = a.module.get<{ store: { capabilities: LockStoreCapabilities } }>(LOCK_ENGINE).store
      .capabilities;
  });

  afterEach(closeApps);

  afterAll(async () => {
    await backend?.stop();
  });

  it('excludes: callers across two instances never lose an update of a shared counter', async () => {
    let counter = 0;
    const callers = 16;
    const calls = await Promise.allSettled(
      Array.from({ length: callers }, (_, i) =>
        [a, b][i % 2].locks.using('counter', async () => {
          const read = counter;
          await sleep(Math.random() * 4);
          counter = read + 1;
        }),
      ),
    );
    const failed = calls.filter((call) => call.status === 'rejected');
    expect({ counter, failed }).toEqual({ counter: callers, failed: [] });
  });

  it('issues fencing tokens that strictly increase across release, handover, expiry and a new instance', async () => {
    const tokens: number[] = [];
    for (const app of [a, b, a]) {
      const lock = await app.locks.acquire('fenced');
      tokens.push(lock.fencingToken);
      await lock.release();
    }
    const held = await a.locks.acquire('fenced');
    const next = pending(b.locks.acquire('fenced'));
    await sleep(20);
    await held.release();
    tokens.push(held.fencingToken, (await next).fencingToken);
    await (await next).release();
    if (can.keepAlive === 'ttl') {
      const expiring = await a.locks.acquire('fenced', { ttl: 200, watchdog: false });
      tokens.push(expiring.fencingToken);
      await until(async () => !(await b.locks.isLocked('fenced')), BOUND);
      expect(await expiring.release()).toBe(false);
    } else {
      await expectRefused(a.locks.acquire('fenced', { watchdog: false }), 'watchdog');
    }
    const later = await (await boot()).locks.acquire('fenced');
    tokens.push(later.fencingToken);
    await later.release();
    expect(tokens.every(Number.isSafeInteger)).toBe(true);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('wakes waiters queued across two instances in the order they came', async () => {
    if (!can.queueing) {
      // A backend with no line of its own cannot promise an order, and says so at boot.
      await expectRefused(boot({ fair: true }), 'fair');
      return;
    }
    const holder = await a.locks.acquire('line');
    const served: number[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      waits.push(pending([a, b][i % 2].locks.using('line', () => void served.push(i))));
      await until(async () => (await backend.waiting(holder.key)) === i + 1, BOUND);
    }
    await holder.release();
    await Promise.all(waits);
    expect(served).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('keeps renewing a lock held past three times its ttl: still held, others refused', async () => {
    const lock = await a.locks.acquire('renewed', { ttl: 500 });
    await sleep(1_600);
    expect(lock.signal.aborted).toBe(false);
    expect(await b.locks.tryAcquire('renewed')).toBeNull();
    expect(await b.locks.isLocked('renewed')).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it('tells the holder of a lock deleted behind its back: the signal aborts, using rejects with LockLostError', async () => {
    let lost: Lock | undefined;
    const work = a.locks.using(
      'evicted',
      async (lock) => {
        lost = lock;
        await backend.evict(lock.key, lock.token);
        // The next renewals (every ttl / 3) find the lock gone; 5 s is far more than they take.
        const unaware = delay(5_000, 'still not aborted after 5 s', { ref: false });
        expect(await Promise.race([aborted(lock), unaware])).toBeInstanceOf(LockLostError);
      },
      { ttl: 300 },
    );
    await expect(work).rejects.toBeInstanceOf(LockLostError);
    const next = await b.locks.acquire('evicted', { waitTimeout: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(lost!.fencingToken);
    await next.release();
  });

  it('throttles with holdFor: the key stays held until the window ends, or holdFor is refused', async () => {
    const window: AcquireOptions = { holdFor: 600 };
    if (!can.throttle) {
      await expectRefused(a.locks.acquire('throttled', window), 'holdFor');
      return;
    }
    if (can.throttle === 'mutex') {
      await expectRefused(a.locks.acquire('throttled', { ...window, limit: 2 }), 'holdFor');
    }
    const asked = performance.now();
    await a.locks.using('throttled', () => undefined, window);
    const early = await b.locks
      .using('throttled', () => 'ran', { ...window, waitTimeout: 0 })
      .catch((error: unknown) => error);
    expect(early).toBeInstanceOf(LockNotAcquiredError);
    expect(early).toMatchObject({ throttled: true });
    // A caller that waits is served once the window ends, not before.
    const waited = await b.locks.using('throttled', () => performance.now() - asked);
    await until(async () => !(await b.locks.isLocked('throttled')), BOUND);
    // The window runs from the acquire, which came after `asked`: it cannot have ended sooner.
    expect(waited).toBeGreaterThanOrEqual(600 - 20);
    await expect(b.locks.using('throttled', () => 'ran', window)).resolves.toBe('ran');
  });

  describe('throttled or in conflict', () => {
    const holdFor = 2_000;
    /** What `call` was refused with: its `throttled`, and whether `retryAfterMs` is in the window. */
    const refusalOf = async (call: Promise<unknown>) => {
      const error: unknown = await call.then(
        () => new Error('not refused'),
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      const { throttled, retryAfterMs } = error as LockNotAcquiredError;
      const inWindow = retryAfterMs !== undefined && retryAfterMs > 0 && retryAfterMs <= holdFor;
      return { throttled, retryAfterMs: retryAfterMs === undefined ? 'none' : inWindow };
    };
    const throttled = { throttled: true, retryAfterMs: true };
    const conflict = { throttled: false, retryAfterMs: 'none' };

    it('refuses a caller without holdFor inside a holder’s window as throttled: while the work runs, after it, and after a wait', async () => {
      if (!can.throttle) return;
      const lock = await a.locks.acquire('window', { holdFor });
      expect(await refusalOf(b.locks.acquire('window', { waitTimeout: 0 }))).toEqual(throttled);
      await lock.release();
      expect(await refusalOf(b.locks.acquire('window', { waitTimeout: 0 }))).toEqual(throttled);
      expect(await refusalOf(b.locks.acquire('window', { waitTimeout: 100 }))).toEqual(throttled);
      await until(async () => !(await b.locks.isLocked('window')), BOUND);
    });

    it('refuses as a plain conflict when the holder’s work outlasted its window', async () => {
      if (!can.throttle) return;
      const lock = await a.locks.acquire('outlasted', { holdFor: 100 });
      await sleep(300);
      expect(await refusalOf(b.locks.acquire('outlasted', { waitTimeout: 0 }))).toEqual(conflict);
      const waited = b.locks.acquire('outlasted', { holdFor, waitTimeout: 100 });
      expect(await refusalOf(waited)).toEqual(conflict);
      await lock.release();
    });

    it('refuses a caller with holdFor as a plain conflict when the holder has none', async () => {
      if (!can.throttle) return;
      const lock = await a.locks.acquire('plain');
      const early = b.locks.acquire('plain', { holdFor, waitTimeout: 0 });
      expect(await refusalOf(early)).toEqual(conflict);
      await lock.release();
    });

    it('refuses a semaphore caller as throttled only while every holder is a throttle in its window', async () => {
      if (can.throttle !== true || !can.kinds) return;
      const permit = { limit: 2, waitTimeout: 0 };
      const first = await a.locks.acquire('permits', { ...permit, holdFor });
      const plain = await a.locks.acquire('permits', permit);
      expect(await refusalOf(b.locks.acquire('permits', permit))).toEqual(conflict);
      await plain.release();
      const second = await b.locks.acquire('permits', { ...permit, holdFor });
      expect(await refusalOf(b.locks.acquire('permits', permit))).toEqual(throttled);
      await Promise.all([first.release(), second.release()]);
      await until(async () => !(await b.locks.isLocked('permits')), BOUND);
    });
  });

  it('hands a lock to another instance, which keeps it with the same fencing token until it releases, or refuses to', async () => {
    const lock = await a.locks.acquire('handed', { ttl: 500 });
    if (!can.handles) {
      await expectRefused(lock.handOff(), 'handOff');
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
      return;
    }
    // JSON on the way, as a queue would carry it.
    const handle = JSON.parse(JSON.stringify(await lock.handOff())) as LockHandle;
    const adopted = await b.locks.adopt(handle);
    expect(lock.signal.aborted).toBe(true);
    expect(adopted.fencingToken).toBe(lock.fencingToken);
    // Past two TTLs: the adopter's watchdog renews it now.
    await sleep(1_200);
    expect(adopted.signal.aborted).toBe(false);
    expect(await a.locks.tryAcquire('handed')).toBeNull();
    expect(await adopted.release()).toBe(true);
    const next = await a.locks.acquire('handed', { waitTimeout: BOUND });
    expect(next.fencingToken).toBeGreaterThan(adopted.fencingToken);
    expect(await next.release()).toBe(true);
  });

  it('refuses to adopt a handle whose fencing token was raised', async () => {
    if (!can.handles) return;
    const lock = await a.locks.acquire('forged', { ttl: 500 });
    const handle = await lock.handOff();
    const forged = { ...handle, fencingToken: handle.fencingToken + 1_000_000_000_000 };
    await expect(b.locks.adopt(forged)).rejects.toMatchObject({ name: 'LockOptionsError' });
    // Left to expire: the next holder's token is the store's next, not the forged one's.
    const next = await a.locks.acquire('forged', { waitTimeout: BOUND });
    expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
    expect(next.fencingToken).toBeLessThan(forged.fencingToken);
    expect(await next.release()).toBe(true);
  });

  describe('adoption', () => {
    /** The store of `app`'s module, as the engine calls it. */
    const storeOf = (app: LockApp) => app.module.get<{ store: LockStore }>(LOCK_ENGINE).store;
    /**
     * Three app instances that name themselves, as `inspect()` shows them, connected before the
     * test goes on (an adoption's answer must come within its ttl).
     */
    const three = async () => {
      const apps = [
        await boot({ instanceId: 'hander' }),
        await boot({ instanceId: 'adopter' }),
        await boot({ instanceId: 'another' }),
      ];
      await Promise.all(apps.map((app) => app.locks.isLocked('connected')));
      return apps;
    };
    /** JSON on the way, as a queue would carry it. */
    const handOff = async (lock: Lock) =>
      JSON.parse(JSON.stringify(await lock.handOff())) as LockHandle;

    it('moves the hold to the adopter, which inspect names, and the handle holds nothing any more', async () => {
      if (!can.handles) return;
      const [hander, adopter, another] = await three();
      const lock = await hander.locks.acquire('adopted', { ttl: 500 });
      const handle = await handOff(lock);
      const adopted = await adopter.locks.adopt(handle);
      const { holders } = await another.locks.inspect('adopted');
      if (!storeOf(adopter).transfer) {
        // Documented for a store without transfer: it adopts by renewing the handle's token.
        expect(adopted.token).toBe(lock.token);
        expect(holders).toMatchObject([{ owner: 'hander', fencingToken: lock.fencingToken }]);
        expect(await adopted.release()).toBe(true);
        return;
      }
      expect(adopted).toMatchObject({ key: lock.key, fencingToken: lock.fencingToken });
      expect(adopted.token).not.toBe(lock.token);
      expect(holders).toMatchObject([{ owner: 'adopter', fencingToken: lock.fencingToken }]);
      // A second adoption, in any instance, finds the handle's token gone, and so does the
      // handing instance's token in the store.
      await expect(another.locks.adopt(handle)).rejects.toBeInstanceOf(LockLostError);
      await expect(hander.locks.adopt(handle)).rejects.toBeInstanceOf(LockLostError);
      const { key, token, fencingToken } = handle;
      expect(await storeOf(hander).renew([{ key, token, ttl: 500, fencingToken }])).toEqual([
        false,
      ]);
      expect((await storeOf(hander).release(key, token)).released).toBe(false);
      // Past two TTLs: the adopter's watchdog renews its own token.
      await sleep(1_200);
      expect(adopted.signal.aborted).toBe(false);
      expect(await another.locks.tryAcquire('adopted')).toBeNull();
      expect(await adopted.release()).toBe(true);
      expect(await another.locks.isLocked('adopted')).toBe(false);
    });

    it('gives the lock to one of two instances that adopt one handle at once, and refuses the other', async () => {
      if (!can.handles) return;
      const [hander, adopter, another] = await three();
      const lock = await hander.locks.acquire('adopted', { ttl: 2_000 });
      const handle = await handOff(lock);
      const results = await Promise.allSettled([
        adopter.locks.adopt(handle),
        another.locks.adopt(handle),
      ]);
      const adopted = results.flatMap((result) =>
        result.status === 'fulfilled' ? [result.value] : [],
      );
      const refused = results.flatMap((result): unknown[] =>
        result.status === 'rejected' ? [result.reason] : [],
      );
      if (storeOf(adopter).transfer) {
        expect(adopted).toHaveLength(1);
        expect(refused).toEqual([expect.any(LockLostError)]);
        const owner = results[0].status === 'fulfilled' ? 'adopter' : 'another';
        const { holders } = await hander.locks.inspect('adopted');
        expect(holders).toMatchObject([{ owner, fencingToken: lock.fencingToken }]);
      }
      await Promise.all(adopted.map((each) => each.release()));
      await until(async () => !(await hander.locks.isLocked('adopted')), BOUND);
    });

    it('answers the same transfer sent again as done, and moves nothing for another token', async () => {
      // A client may resend a command whose answer was lost with its connection (ioredis does).
      if (!can.handles || !storeOf(a).transfer) return;
      const kinds: AcquireOptions[] = can.kinds ? [{}, { limit: 2 }, { mode: 'read' }] : [{}];
      for (const kind of kinds) {
        const lock = await a.locks.acquire('resent', { ...kind, ttl: 2_000 });
        const { key, token, fencingToken } = await handOff(lock);
        const store = storeOf(b);
        const moved = `${token}.moved`;
        const send = (to: string) => store.transfer!(key, token, to, 2_000, fencingToken);
        expect([await send(moved), await send(moved), await send(`${token}.other`)]).toEqual([
          'transferred',
          'transferred',
          'gone',
        ]);
        expect(await store.release(key, moved)).toMatchObject({ released: true });
        expect(await b.locks.isLocked('resent')).toBe(false);
      }
    });

    it('changes nothing when it refuses a handle whose fencing token was altered', async () => {
      if (!can.handles) return;
      const [hander, adopter] = await three();
      const kinds: AcquireOptions[] = can.kinds ? [{}, { limit: 2 }, { mode: 'write' }] : [{}];
      for (const kind of kinds) {
        const lock = await hander.locks.acquire('adopted', { ...kind, ttl: 2_000 });
        const handle = await handOff(lock);
        for (const fencingToken of [handle.fencingToken + 1, handle.fencingToken - 1]) {
          await expect(adopter.locks.adopt({ ...handle, fencingToken })).rejects.toMatchObject({
            name: 'LockOptionsError',
            option: 'handle',
          });
        }
        // The genuine handle is still whole: it is adopted, with its fencing token.
        const adopted = await adopter.locks.adopt(handle);
        expect(adopted.fencingToken).toBe(handle.fencingToken);
        expect(await adopted.release()).toBe(true);
      }
    });

    it('moves a semaphore permit of several and a read share, which inspect shows as before', async () => {
      if (!can.handles || !can.kinds || can.permits === false) return;
      const [hander, adopter, another] = await three();
      const permit = await hander.locks.acquire('pool', { limit: 3, permits: 2, ttl: 2_000 });
      const read = await hander.locks.acquire('doc', { mode: 'read', ttl: 2_000 });
      const handles = [await handOff(permit), await handOff(read)];
      const [movedPermit, movedRead] = await Promise.all(
        handles.map((handle) => adopter.locks.adopt(handle)),
      );
      const owner = storeOf(adopter).transfer ? 'adopter' : 'hander';
      expect((await another.locks.inspect('pool')).holders).toMatchObject([
        { owner, permits: 2, fencingToken: permit.fencingToken },
      ]);
      expect((await another.locks.inspect('doc')).holders).toMatchObject([
        { owner, mode: 'read', fencingToken: read.fencingToken },
      ]);
      if (storeOf(adopter).transfer) {
        for (const handle of handles) {
          await expect(another.locks.adopt(handle)).rejects.toBeInstanceOf(LockLostError);
        }
      }
      expect(await another.locks.tryAcquire('doc', { mode: 'write' })).toBeNull();
      expect(await another.locks.tryAcquire('pool', { limit: 3, permits: 2 })).toBeNull();
      await Promise.all([movedPermit.release(), movedRead.release()]);
      expect(await another.locks.isLocked('pool')).toBe(false);
      expect(await another.locks.isLocked('doc')).toBe(false);
    });
  });

  it('takes several keys all or none, in key order, with one handle for them all', async () => {
    const both = await a.locks.acquire(['pair:b', 'pair:a', 'pair:b'], { ttl: 300 });
    expect(both.locks.map((lock) => lock.key)).toEqual([`${prefix}pair:a`, `${prefix}pair:b`]);
    expect(both).toMatchObject({
      key: both.locks[0].key,
      fencingToken: both.locks[0].fencingToken,
    });
    expect(await b.locks.tryAcquire('pair:b')).toBeNull();
    // A handle carries one lock: each of the several is handed off on its own, if at all.
    const handOff = both.handOff();
    await expect(handOff).rejects.toBeInstanceOf(LockOptionsError);
    await expect(handOff).rejects.toMatchObject({ option: 'handOff' });
    // All or none: a free key taken first ('pair:0') is given back, its throttle not closed,
    // when a later one is held.
    const refused = b.locks.acquire(['pair:b', 'pair:0'], { waitTimeout: 0, holdFor: 5_000 });
    await expect(refused).rejects.toMatchObject({ key: 'pair:b' });
    expect(await b.locks.isLocked('pair:0')).toBe(false);
    expect(await b.locks.tryAcquire(['pair:0', 'pair:a'])).toBeNull();
    expect(await b.locks.isLocked('pair:0')).toBe(false);
    // The signal aborts when any of them is lost.
    await backend.evict(both.locks[1].key, both.locks[1].token);
    await until(async () => both.signal.aborted, BOUND);
    expect(both.signal.reason).toMatchObject({ key: 'pair:b' });
    expect(both.signal.reason).toBeInstanceOf(LockLostError);
    expect(await both.release()).toBe(false);
    expect(await b.locks.isLocked('pair:a')).toBe(false);
    await expect(a.locks.acquire([])).rejects.toBeInstanceOf(LockKeyResolutionError);
  });

  it('never deadlocks callers that name the same keys in opposite orders', async () => {
    let moved = 0;
    const transfer = (app: LockApp, keys: string[]) =>
      app.locks.using(
        keys,
        async ({ locks }) => {
          expect(locks).toHaveLength(2);
          const read = moved;
          await sleep(Math.random() * 4);
          moved = read + 1;
        },
        { waitTimeout: 5_000 },
      );
    const calls = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0 ? transfer(a, ['from', 'to']) : transfer(b, ['to', 'from']),
      ),
    );
    const failed = calls.filter((call) => call.status === 'rejected');
    expect({ moved, failed }).toEqual({ moved: 12, failed: [] });
  });

  it('admits two holders to a semaphore of 2 and not a third, or refuses limit', async () => {
    const semaphore: AcquireOptions = { limit: 2 };
    if (!can.kinds) {
      await expectRefused(a.locks.acquire('permits', semaphore), 'limit');
      return;
    }
    const first = await a.locks.acquire('permits', semaphore);
    const second = await b.locks.acquire('permits', semaphore);
    expect(await a.locks.tryAcquire('permits', semaphore)).toBeNull();
    expect(await first.release()).toBe(true);
    const third = await b.locks.tryAcquire('permits', semaphore);
    expect(third).not.toBeNull();
    await Promise.all([second.release(), third!.release()]);
  });

  it('takes several permits of a semaphore at once, first come first served, or refuses them', async () => {
    const semaphore: AcquireOptions = { limit: 3 };
    if (!can.kinds) {
      await expectRefused(a.locks.acquire('weighted', { ...semaphore, permits: 2 }), 'limit');
      return;
    }
    if (can.permits === false) {
      await expectRefused(a.locks.acquire('weighted', { ...semaphore, permits: 2 }), 'permits');
      await (await a.locks.acquire('weighted', semaphore)).release();
      return;
    }
    await expect(a.locks.acquire('weighted', { ...semaphore, permits: 4 })).rejects.toMatchObject({
      option: 'permits',
    });
    const one = await a.locks.acquire('weighted', semaphore);
    const two = await b.locks.acquire('weighted', { ...semaphore, permits: 2 });
    expect(await a.locks.tryAcquire('weighted', semaphore)).toBeNull();
    await two.release();
    const served: string[] = [];
    const big = pending(
      b.locks.using('weighted', () => void served.push('big'), { ...semaphore, permits: 3 }),
    );
    // Two permits are free, but the request for three came first: a single one waits behind it.
    await until(async () => {
      const single = await a.locks.tryAcquire('weighted', semaphore);
      await single?.release();
      return single === null;
    }, BOUND);
    const small = pending(a.locks.using('weighted', () => void served.push('small'), semaphore));
    await sleep(50);
    expect(served).toEqual([]);
    await one.release();
    await Promise.all([big, small]);
    expect(served).toEqual(['big', 'small']);
  });

  it('lets readers share and a writer exclude them, or refuses mode', async () => {
    if (!can.kinds) {
      await expectRefused(a.locks.acquire('shared', { mode: 'read' }), 'mode');
      return;
    }
    const readers = [
      await a.locks.acquire('shared', { mode: 'read' }),
      await b.locks.acquire('shared', { mode: 'read' }),
    ];
    expect(await a.locks.tryAcquire('shared', { mode: 'write' })).toBeNull();
    await Promise.all(readers.map((reader) => reader.release()));
    const writer = await b.locks.acquire('shared', { mode: 'write' });
    expect(await a.locks.tryAcquire('shared', { mode: 'read' })).toBeNull();
    expect(await a.locks.tryAcquire('shared', { mode: 'write' })).toBeNull();
    await writer.release();
  });

  describe('inspect', () => {
    /** Two app instances that name themselves, as `inspect()` shows them. */
    const named = async () => [
      await boot({ instanceId: 'app-one' }),
      await boot({ instanceId: 'app-two' }),
    ];
    /** What a holder's `ttlMs` must be: below the ttl it asked for, or -1 for a session. */
    const ttlBelow = (ttl: number): unknown =>
      can.keepAlive === 'session'
        ? -1
        : {
            asymmetricMatch: (ms: unknown) => typeof ms === 'number' && ms > 0 && ms <= ttl,
            toAsymmetricMatcher: () => `a ttl in (0, ${ttl}]`,
          };
    /** The waiters the store can count: those with a place in its line. */
    const counted = (waiters: number) => (can.queueing ? waiters : 0);
    const waitingIs = async (app: LockApp, key: string, waiters: number) =>
      until(async () => (await app.locks.inspect(key)).waiting === counted(waiters), BOUND);

    it('shows a mutex free, then its holder (owner, ttl, fencing token) and its waiter, then the next holder', async () => {
      const [one, two] = await named();
      expect(await two.locks.inspect('inspected')).toEqual({
        key: `${prefix}inspected`,
        state: 'free',
        holders: [],
        waiting: 0,
      });
      const held = await one.locks.acquire('inspected', { ttl: 2_000 });
      const next = pending(two.locks.acquire('inspected', { ttl: 2_000 }));
      await waitingIs(two, 'inspected', 1);
      expect(await two.locks.inspect('inspected')).toEqual({
        key: held.key,
        state: 'held',
        kind: 'mutex',
        holders: [{ owner: 'app-one', ttlMs: ttlBelow(2_000), fencingToken: held.fencingToken }],
        waiting: counted(1),
      });
      await held.release();
      const taken = await next;
      expect(await one.locks.inspect('inspected')).toMatchObject({
        state: 'held',
        holders: [{ owner: 'app-two', fencingToken: taken.fencingToken }],
        waiting: 0,
      });
      await taken.release();
      expect(await one.locks.inspect('inspected')).toMatchObject({ state: 'free', holders: [] });
    });

    it('shows each permit of a semaphore with its owner and fencing token, and who waits', async () => {
      if (!can.kinds) return;
      const [one, two] = await named();
      const permits = [
        await one.locks.acquire('counted', { limit: 2 }),
        await two.locks.acquire('counted', { limit: 2 }),
      ];
      const third = pending(one.locks.acquire('counted', { limit: 2 }));
      await waitingIs(one, 'counted', 1);
      const info = await two.locks.inspect('counted');
      expect(info).toMatchObject({
        state: 'held',
        kind: 'semaphore',
        limit: 2,
        waiting: counted(1),
      });
      expect(sortedByOwner(info.holders)).toEqual([
        {
          owner: 'app-one',
          ttlMs: ttlBelow(30_000),
          fencingToken: permits[0].fencingToken,
          permits: 1,
        },
        {
          owner: 'app-two',
          ttlMs: ttlBelow(30_000),
          fencingToken: permits[1].fencingToken,
          permits: 1,
        },
      ]);
      await permits[1].release();
      const last = await third;
      const after = await two.locks.inspect('counted');
      expect(sortedByOwner(after.holders).map((holder) => holder.fencingToken)).toEqual(
        [permits[0], last].map((permit) => permit.fencingToken).sort((x, y) => x - y),
      );
      await Promise.all([permits[0].release(), last.release()]);
    });

    it('shows how many permits each weighted hold of a semaphore takes', async () => {
      if (!can.kinds || can.permits === false) return;
      const [one, two] = await named();
      const holds = [
        await one.locks.acquire('weighed', { limit: 10, permits: 6 }),
        await two.locks.acquire('weighed', { limit: 10, permits: 1 }),
      ];
      const info = await one.locks.inspect('weighed');
      expect(info).toMatchObject({ state: 'held', kind: 'semaphore', limit: 10 });
      expect(sortedByOwner(info.holders)).toEqual([
        expect.objectContaining({ owner: 'app-one', permits: 6 }),
        expect.objectContaining({ owner: 'app-two', permits: 1 }),
      ]);
      await Promise.all(holds.map((hold) => hold.release()));
    });

    it('shows the readers of a read-write lock, the writer that waits, then the writer', async () => {
      if (!can.kinds) return;
      const [one, two] = await named();
      const readers = [
        await one.locks.acquire('shared-doc', { mode: 'read' }),
        await two.locks.acquire('shared-doc', { mode: 'read' }),
      ];
      const writer = pending(one.locks.acquire('shared-doc', { mode: 'write' }));
      await waitingIs(two, 'shared-doc', 1);
      const info = await two.locks.inspect('shared-doc');
      expect(info).toMatchObject({ state: 'held', kind: 'read-write', waiting: counted(1) });
      expect(sortedByOwner(info.holders)).toEqual([
        {
          owner: 'app-one',
          ttlMs: ttlBelow(30_000),
          fencingToken: readers[0].fencingToken,
          mode: 'read',
        },
        {
          owner: 'app-two',
          ttlMs: ttlBelow(30_000),
          fencingToken: readers[1].fencingToken,
          mode: 'read',
        },
      ]);
      await Promise.all(readers.map((reader) => reader.release()));
      const written = await writer;
      const after = await two.locks.inspect('shared-doc');
      expect(after).toMatchObject({
        kind: 'read-write',
        holders: [{ owner: 'app-one', mode: 'write' }],
        waiting: 0,
      });
      // The writer's own attempt may reach the store after the release of its process served
      // it: that attempt restarts the same hold, with a later fencing token.
      expect(after.holders[0].fencingToken).toBeGreaterThanOrEqual(written.fencingToken);
      await written.release();
    });
  });

  describe('forceRelease', () => {
    /** Resolves with the reason once `lock`'s signal aborts, or fails after 5 s. */
    const lost = (lock: Lock) =>
      Promise.race([aborted(lock), delay(5_000, 'not aborted after 5 s', { ref: false })]);

    it('evicts the holder: the next waiter gets in, the evicted signal aborts, its release says false and its fenced write is refused', async () => {
      const held = await a.locks.acquire('stuck', { ttl: 900 });
      const next = pending(b.locks.acquire('stuck', { ttl: 900 }));
      await until(
        async () => (await b.locks.inspect('stuck')).waiting === (can.queueing ? 1 : 0),
        BOUND,
      );
      const resource = `fenced:${prefix}stuck`;
      // RedLock keeps no fenced resources (its writeFenced is refused): the rest holds there too.
      const fenced = await a.locks.writeFenced(resource, 'first', held.fencingToken).then(
        () => true,
        () => false,
      );
      expect(await b.locks.forceRelease('stuck')).toBe(1);
      const taken = await next;
      expect(taken.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await lost(held)).toBeInstanceOf(LockLostError);
      expect(await held.release()).toBe(false);
      if (fenced) {
        await b.locks.writeFenced(resource, 'next', taken.fencingToken);
        await expect(
          a.locks.writeFenced(resource, 'stale', held.fencingToken),
        ).rejects.toBeInstanceOf(StaleFencingTokenError);
      }
      expect(await a.locks.inspect('stuck')).toMatchObject({
        holders: [{ fencingToken: taken.fencingToken }],
      });
      expect(taken.signal.aborted).toBe(false);
      await taken.release();
      expect(await a.locks.forceRelease('stuck')).toBe(0);
    });

    it('evicts every holder of a semaphore, and the waiter gets its permit', async () => {
      if (!can.kinds) return;
      const permits = [
        await a.locks.acquire('stuck-permits', { limit: 2, ttl: 900 }),
        await b.locks.acquire('stuck-permits', { limit: 2, ttl: 900 }),
      ];
      const third = pending(a.locks.acquire('stuck-permits', { limit: 2, ttl: 900 }));
      await until(async () => (await b.locks.inspect('stuck-permits')).waiting === 1, BOUND);
      expect(await b.locks.forceRelease('stuck-permits')).toBe(2);
      const permit = await third;
      for (const evicted of permits) {
        expect(await lost(evicted)).toBeInstanceOf(LockLostError);
        expect(await evicted.release()).toBe(false);
      }
      expect(await b.locks.inspect('stuck-permits')).toMatchObject({
        kind: 'semaphore',
        holders: [{ fencingToken: permit.fencingToken }],
      });
      await permit.release();
    });
  });

  it('leaves nothing per key once every lock is released and the instances are closed', async () => {
    await a.locks.using('plain', () => undefined);
    const held = await a.locks.acquire('waited');
    const served = pending(b.locks.using('waited', () => undefined));
    const impatient = b.locks.acquire('waited', { waitTimeout: 100 });
    await expect(impatient).rejects.toBeInstanceOf(LockNotAcquiredError);
    await held.release();
    await served;
    if (can.kinds) {
      await Promise.all(
        [a, b, a].map((app) => app.locks.using('permits', () => sleep(5), { limit: 2 })),
      );
      await Promise.all(
        (['read', 'read', 'write'] as const).map((mode, i) =>
          [a, b][i % 2].locks.using('shared', () => sleep(5), { mode }),
        ),
      );
    }
    if (can.throttle) {
      await a.locks.using('throttled', () => undefined, { holdFor: 100 });
      await until(async () => !(await b.locks.isLocked('throttled')), BOUND);
    }
    await closeApps();
    expect(await backend.residue(prefix)).toEqual([]);
  });
});

/** Holders in the order of their owners' names, for a comparison that ignores the store's order. */
function sortedByOwner(holders: LockHolder[]): LockHolder[] {
  return [...holders].sort((x, y) => x.owner.localeCompare(y.owner));
}
