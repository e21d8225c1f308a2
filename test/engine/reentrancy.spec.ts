import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockLostError, LockModule, WithLock } from '../../src/index.js';
import {
  bootLockApp,
  rawClient,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';

/**
 * Reentrant reuse of a lock never outlives it: a call nested in locked work (in its async call
 * chain) runs under the outer lock, and when that call is detached (a timer, a promise nobody
 * awaits) and outlives the outer work, the lock stays held until it settles. Two app instances
 * share one Redis, as two processes would.
 */

/** A critical section that records whether two runs ever overlapped. */
class Section {
  running = 0;
  overlaps = 0;
  runs = 0;

  async enter(ms: number): Promise<void> {
    this.running++;
    this.runs++;
    if (this.running > 1) this.overlaps++;
    await sleep(ms);
    this.running--;
  }
}

/** Resolves when `settle` is called. */
function signal(): { settled: Promise<void>; settle: () => void } {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  return { settled, settle };
}

describe('reentrant reuse by detached work', () => {
  const prefix = uniquePrefix();
  let a: LockApp;
  let b: LockApp;
  let redis: Redis;

  beforeAll(async () => {
    a = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
    b = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
    redis = rawClient(sharedRedisUrl());
  });

  afterAll(async () => {
    await a.close();
    await b.close();
    await redis.quit();
  });

  it.each([
    ['a promise nobody awaits', (start: () => void) => void Promise.resolve().then(start)],
    ['a timer', (start: () => void) => void setTimeout(start, 1)],
  ])(
    'keeps the lock held for a reuser started from %s until it settles: another instance never overlaps',
    async (_, detach) => {
      const key = `job:${Math.random()}`;
      const section = new Section();
      const joined = signal();
      const settled: string[] = [];
      let detached: Promise<void> | undefined;
      const outer = a.locks.using(key, async () => {
        detach(() => {
          detached = a.locks.using(key, () => {
            joined.settle();
            return section.enter(300);
          });
          void detached.then(() => settled.push('reuser'));
        });
        await joined.settled;
      });
      void outer.then(() => settled.push('outer'));
      await joined.settled;
      // The outer work ends now, while the detached reuser is still in its critical section.
      const other = b.locks.using(key, () => section.enter(10), { waitTimeout: 10_000 });
      await Promise.all([outer, detached, other]);
      expect(section.runs).toBe(2);
      expect(section.overlaps).toBe(0);
      expect(settled).toEqual(['reuser', 'outer']);
    },
  );

  it('tells a detached reuser, and the work that took the lock, that the lock was lost', async () => {
    const key = `lost:${Math.random()}`;
    const joined = signal();
    let detached: Promise<unknown> | undefined;
    let abortedInside = false;
    const outer = a.locks.using(
      key,
      () => {
        detached = a.locks.using(key, async (lock) => {
          joined.settle();
          // Bounded, so that a reuser that is never told fails the test instead of hanging it.
          await Promise.race([
            new Promise((resolve) => lock.signal.addEventListener('abort', resolve)),
            sleep(3_000),
          ]);
          abortedInside = lock.signal.aborted;
        });
        detached.catch(() => undefined);
      },
      { ttl: 300 },
    );
    await joined.settled;
    // Take the lock away behind the library's back while only the reuser still works under it.
    await redis.del(`${prefix}${key}`);
    await expect(detached).rejects.toBeInstanceOf(LockLostError);
    await expect(outer).rejects.toBeInstanceOf(LockLostError);
    expect(abortedInside).toBe(true);
  });

  it('lets a reuser that comes after the outer work ended acquire the lock afresh', async () => {
    const key = `late:${Math.random()}`;
    let late: Promise<number> | undefined;
    const scheduled = signal();
    const outerToken = await a.locks.using(key, (lock) => {
      setTimeout(() => {
        late = a.locks.using(key, (inner) => inner.fencingToken);
        scheduled.settle();
      }, 50);
      return lock.fencingToken;
    });
    await scheduled.settled;
    expect(await late).toBeGreaterThan(outerToken);
  });

  it('lets work on several keys nested in work on one of them reuse that one and take the others', async () => {
    const key = `outer:${Math.random()}`;
    const other = `inner:${Math.random()}`;
    await a.locks.using(key, async (outer) => {
      await a.locks.using([other, key], async (both) => {
        expect(both.locks.map((lock) => lock.key)).toEqual([
          `${prefix}${other}`,
          `${prefix}${key}`,
        ]);
        expect(both.locks[1]).toBe(outer);
        expect(await b.locks.isLocked(other)).toBe(true);
      });
      expect(await b.locks.isLocked(other)).toBe(false);
      expect(outer.signal.aborted).toBe(false);
    });
    expect(await b.locks.isLocked(key)).toBe(false);
  });
});

@Injectable()
class Jobs {
  constructor(readonly section: Section) {}

  /** Starts the job and returns without waiting for it. */
  @WithLock('job:<id>', { waitTimeout: 10_000 })
  async kick(id: string, returning: () => void): Promise<void> {
    void this.run(id);
    await sleep(10);
    returning();
  }

  @WithLock('job:<0>', { waitTimeout: 10_000 })
  async run(_id: string): Promise<void> {
    await this.section.enter(300);
  }
}

describe('@WithLock reuse by detached work', () => {
  const prefix = uniquePrefix();
  const section = new Section();
  const apps: { jobs: Jobs; close: () => Promise<void> }[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const module = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: sharedRedisUrl(), keyPrefix: prefix })],
        providers: [Jobs, { provide: Section, useValue: section }],
      }).compile();
      await module.init();
      apps.push({ jobs: module.get(Jobs), close: () => module.close() });
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
  });

  it('keeps the lock until the detached job ends: the other instance waits for it', async () => {
    const [first, second] = apps;
    const returning = signal();
    const kick = first.jobs.kick('7', returning.settle);
    await returning.settled;
    await Promise.all([kick, second.jobs.run('7')]);
    expect(section.runs).toBe(2);
    expect(section.overlaps).toBe(0);
  });
});
