import { LockConnectionError, MemoryLockSpace } from '../../src/index.js';
import type { AcquireAttempt, RenewalEntry } from '../../src/index.js';
import { MemoryLockStore } from '../../src/store/memory/memory.store.js';
import { bootLockApp, sleep } from '../support/lock-app.js';
import { OwnStore } from '../support/own-store.js';

const TTL = 1_000;

/**
 * A store on which key `a` answers attempts and renewals 95% of a TTL late while `slow` is set
 * (a slow shard), and key `b` 20% late, which then ends the slowness: `a` is granted with
 * almost no validity left, and has none left once `b` is taken.
 */
class SlowShardStore extends OwnStore {
  slow = true;
  /** Each attempt and release, by key, in the order the store got them. */
  readonly seen: string[] = [];

  override release(key: string, token: string, successor?: string) {
    this.seen.push(`release ${key}`);
    return super.release(key, token, successor);
  }

  override async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    this.seen.push(`acquire ${key}`);
    const answer = await super.acquire(key, token, ttl, queue, inUse);
    if (key.endsWith(':a') && this.slow) await sleep(0.95 * TTL);
    if (key.endsWith(':b')) {
      await sleep(0.2 * TTL);
      this.slow = false;
    }
    return answer;
  }

  override async renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    const renewed = await super.renew(entries);
    if (this.slow && entries.some(({ key }) => key.endsWith(':a'))) await sleep(0.95 * TTL);
    return renewed;
  }
}

/**
 * Several keys are taken one after the other, and the work may start only while every one of
 * them is valid: a key whose validity ran out while a later one was taken may be another's
 * already. It is given back and asked for again, as a single key answered too late would be.
 */
describe('several keys at once, each valid when the call returns', () => {
  const boot = async () => {
    const store = new SlowShardStore(new MemoryLockStore(true, new MemoryLockSpace().state, 'sk:'));
    return { store, app: await bootLockApp({ store, keyPrefix: 'sk:' }) };
  };

  it('asks again for a key whose validity ran out while a later key was taken', async () => {
    const { app, store } = await boot();
    try {
      const both = await app.locks.acquire(['a', 'b'], { ttl: TTL, waitTimeout: 10_000 });
      // The later key goes back too, and both are taken again in key order: asking for 'a'
      // while holding 'b' could wait in a cycle with a caller that took 'a' meanwhile.
      expect(store.seen.slice(0, 2)).toEqual(['acquire sk:a', 'acquire sk:b']);
      expect(store.seen.slice(2, -2)).toContain('release sk:b');
      expect(store.seen.slice(-2)).toEqual(['acquire sk:a', 'acquire sk:b']);
      const now = performance.now();
      for (const lock of both.locks) {
        expect((lock as unknown as { validUntil: number }).validUntil).toBeGreaterThan(now);
        expect(lock.signal.aborted).toBe(false);
      }
      await both.release();
    } finally {
      await app.close();
    }
  });

  it('does so for using() too, which takes its keys in a scope of its own', async () => {
    const { app } = await boot();
    try {
      const validAtStart = await app.locks.using(
        ['a', 'b'],
        ({ locks }) => {
          const now = performance.now();
          return locks.map((lock) => (lock as unknown as { validUntil: number }).validUntil > now);
        },
        { ttl: TTL, waitTimeout: 10_000 },
      );
      expect(validAtStart).toEqual([true, true]);
    } finally {
      await app.close();
    }
  });

  it('gives up without a wait, and leaves none of the keys held', async () => {
    const { app } = await boot();
    try {
      const refused = app.locks.acquire(['a', 'b'], { ttl: TTL, waitTimeout: 0 });
      // As for a single key whose grant came too late: the answers were too slow.
      await expect(refused).rejects.toBeInstanceOf(LockConnectionError);
      await expect(refused).rejects.toMatchObject({ key: 'a' });
      expect(await app.locks.isLocked('a')).toBe(false);
      expect(await app.locks.isLocked('b')).toBe(false);
    } finally {
      await app.close();
    }
  });
});
