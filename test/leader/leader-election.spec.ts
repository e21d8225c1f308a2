import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import pg from 'pg';
import {
  Leader,
  LeaderService,
  LockLostError,
  LockModule,
  MemoryLockSpace,
  type Leadership,
  type LockModuleOptions,
} from '../../src/index.js';
import { leaderIdOf } from '../../src/keys/lock-keys.js';
import { until } from '../support/backends.js';
import { rawClient, sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';
import { byTier } from '../support/tiers.js';

/** What every instance of the app did, in the order it happened in this process. */
let events: string[] = [];
/** How many of the next calls of the method fail, as a crashing consumer would. */
let failures = 0;

@Injectable()
class Relay {
  /** Set per app, to tell the instances apart in `events`. */
  instance = '?';
  readonly terms: Leadership[] = [];

  @Leader('relay', { ttl: 1_000 })
  relay(leadership: Leadership) {
    this.terms.push(leadership);
    events.push(`lead ${this.instance} ${leadership.epoch}`);
    leadership.signal.addEventListener('abort', () =>
      events.push(`abort ${this.instance} ${leadership.epoch}`),
    );
    if (failures > 0) {
      failures--;
      return Promise.reject(new Error('the consumer crashed'));
    }
    return undefined; // the term goes on after the method returns
  }
}

interface Instance {
  name: string;
  module: TestingModule;
  relay: Relay;
  leaders: LeaderService;
  /** What `observe('relay')` emitted, from before the app booted. */
  seen: boolean[];
}

type Store = 'redis' | 'memory' | 'postgres';

const stores = byTier<[Store]>({ quick: [['redis'], ['memory']], all: [['postgres']] });

describe.each<[Store]>(stores)('leader election (%s, in one process)', (store) => {
  let prefix: string;
  let space: MemoryLockSpace;
  let instances: Instance[];
  let redis: Redis | undefined;
  let postgres: PostgresServer | undefined;
  /** The test's own connection to PostgreSQL, to look behind the library's back. */
  let db: pg.Pool | undefined;

  const options = (name: string): LockModuleOptions => {
    const common = { keyPrefix: prefix, shutdownGrace: 60_000, instanceId: `app-${name}` };
    if (store === 'redis') return { redis: sharedRedisUrl(), ...common };
    if (postgres) return { postgres: postgres.url, ...common };
    return { store: 'memory', memorySpace: space, ...common };
  };

  beforeAll(async () => {
    if (store !== 'postgres') return;
    postgres = await PostgresServer.start();
    db = new pg.Pool({ connectionString: postgres.url, max: 1 });
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await postgres?.stop();
  });

  async function boot(name: string): Promise<Instance> {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot(options(name))],
      providers: [Relay],
    }).compile();
    const relay = module.get(Relay);
    relay.instance = name;
    const leaders = module.get(LeaderService);
    const seen: boolean[] = [];
    leaders.observe('relay').subscribe((leading) => seen.push(leading));
    await module.init();
    const instance = { name, module, relay, leaders, seen };
    instances.push(instance);
    return instance;
  }

  const leaderOf = () => instances.filter((instance) => instance.leaders.isLeader('relay'));
  const oneLeads = () => until(async () => leaderOf().length === 1, 10_000);
  const lastTerm = (instance: Instance) => instance.relay.terms[instance.relay.terms.length - 1];
  /**
   * The instance whose last term is the first to begin after `epoch`, once one has: when two
   * terms have begun by the time it looks (a term that failed at once, and the next), the one
   * with the lower epoch, whatever the order of the instances.
   */
  const nextTerm = async (epoch: number) => {
    const first = () =>
      instances
        .filter((i) => (lastTerm(i)?.epoch ?? 0) > epoch)
        .sort((x, y) => lastTerm(x).epoch - lastTerm(y).epoch)[0];
    await until(async () => first() !== undefined, 10_000);
    return first();
  };

  beforeEach(async () => {
    events = [];
    prefix = uniquePrefix();
    space = new MemoryLockSpace();
    instances = [];
    if (store === 'redis') redis = rawClient(sharedRedisUrl());
    for (const name of ['a', 'b', 'c']) await boot(name);
    await oneLeads();
  });

  afterEach(async () => {
    await Promise.all(instances.map((instance) => instance.module.close()));
    await redis?.quit();
    if (db) {
      const { rows } = await db.query(
        'SELECT key FROM nestjs_lock WHERE key LIKE $1 UNION ALL ' +
          'SELECT key FROM nestjs_lock_queue WHERE key LIKE $1',
        [`%${prefix}%`],
      );
      expect(rows).toEqual([]);
    }
  });

  it('elects one instance and calls its @Leader method once, with its Leadership', async () => {
    await sleep(300);
    const [leader] = leaderOf();
    expect(leaderOf()).toHaveLength(1);
    expect(instances.map((i) => i.relay.terms.length).sort()).toEqual([0, 0, 1]);
    const term = lastTerm(leader);
    expect(term).toMatchObject({ name: 'relay' });
    expect(Number.isSafeInteger(term.epoch) && term.epoch > 0).toBe(true);
    expect(term.signal.aborted).toBe(false);
    expect(leader.seen).toEqual([false, true]);
    for (const standby of instances.filter((i) => i !== leader))
      expect(standby.seen).toEqual([false]);
  });

  it('tells every instance who leads, from the store', async () => {
    const [leader] = leaderOf();
    const expected = { owner: `app-${leader.name}`, epoch: lastTerm(leader).epoch };
    for (const instance of instances) {
      await expect(instance.leaders.leader('relay')).resolves.toEqual(expected);
      await expect(instance.leaders.leader('nobody')).resolves.toBeNull();
    }
    await leader.leaders.resign('relay');
    const next = await nextTerm(expected.epoch);
    await expect(leader.leaders.leader('relay')).resolves.toEqual({
      owner: `app-${next.name}`,
      epoch: lastTerm(next).epoch,
    });
  });

  it('keeps the leadership past many ttls after the method returned', async () => {
    const [leader] = leaderOf();
    await sleep(3_500); // over 3 ttls of 1 s: only the watchdog keeps it
    expect(leaderOf()).toEqual([leader]);
    expect(events).toEqual([`lead ${leader.name} ${lastTerm(leader).epoch}`]);
  });

  it('hands over at once on resign: the old signal aborts first, the new epoch is greater', async () => {
    const [leader] = leaderOf();
    const term = lastTerm(leader);
    await leader.leaders.resign('relay');
    expect(term.signal.aborted).toBe(true);
    expect(term.signal.reason).toBeInstanceOf(LockLostError);
    expect(leader.leaders.isLeader('relay')).toBe(false);
    const next = await nextTerm(term.epoch);
    expect(next).not.toBe(leader);
    expect(events).toEqual([
      `lead ${leader.name} ${term.epoch}`,
      `abort ${leader.name} ${term.epoch}`,
      `lead ${next.name} ${lastTerm(next).epoch}`,
    ]);
    expect(leader.seen).toEqual([false, true, false]);
    expect(next.seen).toEqual([false, true]);
  });

  it('hands over at shutdown without waiting for the drain (shutdownGrace 60 s)', async () => {
    const [leader] = leaderOf();
    const term = lastTerm(leader);
    await leader.module.close();
    instances = instances.filter((i) => i !== leader);
    expect(term.signal.aborted).toBe(true);
    const next = await nextTerm(term.epoch);
    expect(events.slice(0, 3)).toEqual([
      `lead ${leader.name} ${term.epoch}`,
      `abort ${leader.name} ${term.epoch}`,
      `lead ${next.name} ${lastTerm(next).epoch}`,
    ]);
    expect(leader.seen).toEqual([false, true, false]);
  });

  it('gives the leadership up when the method fails, and another instance leads', async () => {
    failures = 1;
    const [leader] = leaderOf();
    await leader.leaders.resign('relay'); // the next term's method fails
    const failed = await nextTerm(lastTerm(leader).epoch);
    const next = await nextTerm(lastTerm(failed).epoch);
    expect(lastTerm(failed).signal.aborted).toBe(true);
    expect(next.leaders.isLeader('relay')).toBe(true);
  });

  it('tells the leader when its lock is taken behind its back, and it stands again', async () => {
    const [leader] = leaderOf();
    const term = lastTerm(leader);
    const { key } = leaderIdOf(prefix, 'relay');
    // Deleted behind the library's back (no expiry: nothing orders the next leader after the
    // old one's loss here), the watchdog's next renewal finds it gone.
    if (redis) await redis.del(key);
    else if (db) await db.query('DELETE FROM nestjs_lock WHERE key = $1', [key]);
    else space.clear();
    await until(async () => term.signal.aborted, 10_000);
    expect(term.signal.reason).toBeInstanceOf(LockLostError);
    expect(leader.seen.slice(0, 3)).toEqual([false, true, false]);
    await nextTerm(term.epoch);
    await oneLeads();
  });
});
