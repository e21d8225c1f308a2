import {
  LockLostError,
  LockOptionsError,
  MemoryLockSpace,
  type Lock,
  type LockHandle,
  type LockService,
} from '../../src/index.js';
import { backends } from '../support/backends.js';
import { LockProcess } from '../support/lock-child.js';
import {
  aborted,
  bootLockApp,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';

const TTL = 300;

/**
 * A lock handed off by one instance and adopted by another (each its own module and
 * connections), as a scheduler hands work to a queue worker.
 */
describe.each(backends)('handing a lock to another instance (%s)', (_, makeBackend) => {
  const store = makeBackend();
  const apps: LockApp[] = [];
  let space: MemoryLockSpace;
  let prefix: string;
  const boot = async (extra = {}) => {
    const memorySpace = store.name === 'memory' ? space : undefined;
    const options = store.options({ ttl: TTL, keyPrefix: prefix, memorySpace, ...extra });
    const app = await bootLockApp(options);
    apps.push(app);
    return app.locks;
  };
  let scheduler: LockService;
  let worker: LockService;

  beforeEach(async () => {
    space = new MemoryLockSpace();
    prefix = uniquePrefix();
    [scheduler, worker] = [
      await boot({ instanceId: 'scheduler' }),
      await boot({ instanceId: 'worker' }),
    ];
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  afterAll(() => store.close());

  /** JSON on the way, as a queue would carry it. */
  const send = (handle: LockHandle) => JSON.parse(JSON.stringify(handle)) as LockHandle;

  it('the adopter holds it past several ttls, by a token of its own with the same fencing token, until it releases', async () => {
    const lock = await scheduler.acquire('job:1');
    const lost = aborted(lock);
    const handle = await lock.handOff();
    expect(handle).toEqual({
      name: 'job:1',
      key: `${prefix}job:1`,
      token: lock.token,
      fencingToken: lock.fencingToken,
      ttl: TTL,
    });
    const reason = await lost;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(String(reason)).toContain('handed off');
    expect(await lock.release()).toBe(false);

    const adopted = await worker.adopt(send(handle));
    expect(adopted.fencingToken).toBe(lock.fencingToken);
    expect(adopted.token).not.toBe(lock.token);
    // The hold is the adopter's: inspect names it, with the fencing token the lock had.
    expect((await scheduler.inspect('job:1')).holders).toEqual([
      expect.objectContaining({ owner: 'worker', fencingToken: lock.fencingToken }),
    ]);
    await sleep(TTL * 4);
    expect(adopted.signal.aborted).toBe(false);
    expect(await scheduler.tryAcquire('job:1')).toBeNull();
    expect(await adopted.release()).toBe(true);
    expect(await worker.isLocked('job:1')).toBe(false);
  });

  it('a waiter gets the lock only once the adopter releases it', async () => {
    const lock = await scheduler.acquire('job:2');
    const adopted = await worker.adopt(send(await lock.handOff()));
    let got: Lock | undefined;
    const waiting = scheduler
      .acquire('job:2', { waitTimeout: 30_000 })
      .then((next) => (got = next));
    await sleep(TTL * 3);
    expect(got).toBeUndefined();
    await adopted.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(adopted.fencingToken);
    await next.release();
  });

  it('refuses to adopt a lock that expired, and takes nothing', async () => {
    const lock = await scheduler.acquire('job:3');
    const handle = await lock.handOff();
    await sleep(TTL * 2);
    expect(await worker.isLocked('job:3')).toBe(false);
    await expect(worker.adopt(handle)).rejects.toThrow(LockLostError);
    expect(await worker.isLocked('job:3')).toBe(false);
  });

  it('refuses to adopt a lock that its adopter released', async () => {
    const lock = await scheduler.acquire('job:4');
    const handle = await lock.handOff();
    await (await worker.adopt(handle)).release();
    await expect(scheduler.adopt(handle)).rejects.toThrow(LockLostError);
    expect(await scheduler.isLocked('job:4')).toBe(false);
  });

  it('a lock lost or released cannot be handed off; a handle is adopted once per instance', async () => {
    const lock = await scheduler.acquire('job:5');
    await lock.release();
    await expect(lock.handOff()).rejects.toThrow(LockLostError);
    const held = await scheduler.acquire('job:5');
    const handle = await held.handOff();
    await expect(held.handOff()).rejects.toThrow(LockLostError);
    const adopted = await worker.adopt(handle);
    await expect(worker.adopt(handle)).rejects.toThrow(LockLostError);
    await adopted.release();
  });

  it('two adoptions of one handle at once in one instance: one holds the lock, the other is refused', async () => {
    const lock = await scheduler.acquire('job:9');
    const handle = await lock.handOff();
    const results = await Promise.allSettled([worker.adopt(send(handle)), worker.adopt(handle)]);
    const adopted = results.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const refused = results.flatMap((result): unknown[] =>
      result.status === 'rejected' ? [result.reason] : [],
    );
    expect(adopted).toHaveLength(1);
    expect(refused).toEqual([expect.any(LockLostError)]);
    expect(await adopted[0]?.release()).toBe(true);
    expect(await worker.isLocked('job:9')).toBe(false);
  });

  it('a handle is adopted once: another instance, and the one that handed it off, are refused while the adopter holds it', async () => {
    const lock = await scheduler.acquire('job:10');
    const handle = send(await lock.handOff());
    const adopted = await worker.adopt(handle);
    const other = await boot({ instanceId: 'other' });
    await expect(other.adopt(handle)).rejects.toThrow(LockLostError);
    await expect(scheduler.adopt(handle)).rejects.toThrow(LockLostError);
    await sleep(TTL * 3);
    expect(adopted.signal.aborted).toBe(false);
    expect((await other.inspect('job:10')).holders).toEqual([
      expect.objectContaining({ owner: 'worker', fencingToken: lock.fencingToken }),
    ]);
    expect(await adopted.release()).toBe(true);
    expect(await other.isLocked('job:10')).toBe(false);
  });

  it('two instances that adopt one handle at once: one holds the lock, the other is refused', async () => {
    const lock = await scheduler.acquire('job:11');
    const handle = send(await lock.handOff());
    const other = await boot({ instanceId: 'other' });
    const results = await Promise.allSettled([worker.adopt(handle), other.adopt(handle)]);
    const adopted = results.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const refused = results.flatMap((result): unknown[] =>
      result.status === 'rejected' ? [result.reason] : [],
    );
    expect(adopted).toHaveLength(1);
    expect(refused).toEqual([expect.any(LockLostError)]);
    const owner = results[0].status === 'fulfilled' ? 'worker' : 'other';
    expect((await worker.inspect('job:11')).holders).toEqual([expect.objectContaining({ owner })]);
    expect(await adopted[0]?.release()).toBe(true);
    expect(await worker.isLocked('job:11')).toBe(false);
  });

  it('refuses malformed handles, another key prefix, and throttles', async () => {
    await expect(worker.adopt({} as LockHandle)).rejects.toThrow(LockOptionsError);
    const lock = await scheduler.acquire('job:6');
    const handle = await lock.handOff();
    await expect(worker.adopt({ ...handle, key: `other:${handle.name}` })).rejects.toThrow(
      LockOptionsError,
    );
    const other = await boot({ keyPrefix: 'other:' });
    await expect(other.adopt(handle)).rejects.toThrow(LockOptionsError);
    // With a caller queued, Redis keeps "<token> <fencing token> +" under the key: the lock's
    // token with more after it is still not the lock's token.
    const queued = scheduler.acquire('job:6', { waitTimeout: 10_000 });
    while ((await scheduler.inspect('job:6')).waiting === 0) await sleep(5);
    const padded = { ...handle, token: `${handle.token} ${lock.fencingToken}` };
    await expect(worker.adopt(padded)).rejects.toThrow(LockLostError);
    await (await worker.adopt(handle)).release();
    await (await queued).release();
    const throttle = await scheduler.acquire('job:7', { holdFor: 1_000 });
    await expect(throttle.handOff()).rejects.toThrow(LockOptionsError);
    expect(throttle.signal.aborted).toBe(false);
    await throttle.release();
  });

  it('refuses a handle whose fencing token was altered, and a later holder’s fenced writes still go through', async () => {
    const lock = await scheduler.acquire('forged', { ttl: 1_000 });
    const handle = await lock.handOff();
    const forged = { ...handle, fencingToken: handle.fencingToken + 1_000_000_000_000 };
    await expect(worker.adopt(forged)).rejects.toMatchObject({
      name: 'LockOptionsError',
      option: 'handle',
    });
    // Nothing holds it here; it ends by its ttl, and the next holder's token outranks the
    // genuine one, so its fenced write is accepted.
    const next = await worker.acquire('forged', { waitTimeout: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
    expect(next.fencingToken).toBeLessThan(forged.fencingToken);
    await worker.writeFenced('forged:resource', 'v', next.fencingToken);
    await next.release();
  });

  it('semaphore permits and read-write shares travel too, to the adopter, once', async () => {
    const permit = await scheduler.acquire('pool', { limit: 3, permits: 2 });
    const read = await scheduler.acquire('doc', { mode: 'read' });
    const [permitHandle, readHandle] = [send(await permit.handOff()), send(await read.handOff())];
    const [movedPermit, movedRead] = await Promise.all([
      worker.adopt(permitHandle),
      worker.adopt(readHandle),
    ]);
    expect((await scheduler.inspect('pool')).holders).toEqual([
      expect.objectContaining({ owner: 'worker', permits: 2, fencingToken: permit.fencingToken }),
    ]);
    expect((await scheduler.inspect('doc')).holders).toEqual([
      expect.objectContaining({ owner: 'worker', mode: 'read', fencingToken: read.fencingToken }),
    ]);
    await expect(scheduler.adopt(permitHandle)).rejects.toThrow(LockLostError);
    await expect(scheduler.adopt(readHandle)).rejects.toThrow(LockLostError);
    await sleep(TTL * 3);
    expect(await scheduler.tryAcquire('doc', { mode: 'write' })).toBeNull();
    const second = await scheduler.acquire('pool', { limit: 3 });
    expect(await scheduler.tryAcquire('pool', { limit: 3 })).toBeNull();
    await Promise.all([movedPermit.release(), movedRead.release(), second.release()]);
    expect(await scheduler.isLocked('pool')).toBe(false);
    expect(await scheduler.isLocked('doc')).toBe(false);
  });

  it('shutdown leaves a handed-off lock alone, and ends an adopted one', async () => {
    const lock = await scheduler.acquire('job:8');
    const handle = await lock.handOff();
    await apps.shift()?.close();
    const adopted = await worker.adopt(handle);
    const lost = aborted(adopted);
    await apps.shift()?.close();
    expect(await lost).toBeInstanceOf(LockLostError);
    const fresh = await boot();
    expect(await fresh.isLocked('job:8')).toBe(false);
  });
});

describe('handing a lock to another process (redis)', () => {
  it('a worker process adopts it, keeps it past several ttls, and releases it', async () => {
    const options = { redis: sharedRedisUrl(), ttl: TTL, keyPrefix: uniquePrefix() };
    const app = await bootLockApp(options);
    const worker = await LockProcess.start({ ...options, instanceId: 'worker' });
    try {
      const lock = await app.locks.acquire('job');
      const adopted = await worker.adopt(await lock.handOff());
      expect(adopted.fencingToken).toBe(lock.fencingToken);
      expect((await app.locks.inspect('job')).holders).toEqual([
        expect.objectContaining({ owner: 'worker', fencingToken: lock.fencingToken }),
      ]);
      await sleep(TTL * 4);
      expect(await app.locks.tryAcquire('job')).toBeNull();
      expect(await lock.release()).toBe(false);
      expect(await adopted.release()).toBe(true);
      expect(await app.locks.isLocked('job')).toBe(false);
    } finally {
      await worker.close();
      await app.close();
    }
  });

  it('a second worker process that adopts the same handle is refused while the first holds it', async () => {
    const options = { redis: sharedRedisUrl(), ttl: TTL, keyPrefix: uniquePrefix() };
    const app = await bootLockApp(options);
    const [first, second] = await Promise.all(
      ['first', 'second'].map((instanceId) => LockProcess.start({ ...options, instanceId })),
    );
    try {
      const lock = await app.locks.acquire('job');
      const handle = await lock.handOff();
      const adopted = await first.adopt(handle);
      await expect(second.adopt(handle)).rejects.toThrow(/^LockLostError/);
      await sleep(TTL * 3);
      expect((await app.locks.inspect('job')).holders).toEqual([
        expect.objectContaining({ owner: 'first', fencingToken: lock.fencingToken }),
      ]);
      expect(await adopted.release()).toBe(true);
      expect(await app.locks.isLocked('job')).toBe(false);
    } finally {
      await Promise.all([first.close(), second.close()]);
      await app.close();
    }
  });
});
