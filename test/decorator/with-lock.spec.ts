import { jest } from '@jest/globals';
import { Injectable, HttpException, Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockKeyResolutionError,
  LockLostError,
  LockModule,
  LockNotAcquiredError,
  LockOptionsError,
  LockService,
  WithLock,
  type Lock,
} from '../../src/index.js';
import { RedisServer } from '../support/redis-server.js';
import { backends, type Backend } from '../support/backends.js';
import { sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

interface Dto {
  user: { id: unknown };
}

@Injectable()
class Accounts {
  running = 0;
  maxRunning = 0;
  skippedRuns = 0;
  readonly keys: string[] = [];

  constructor(
    readonly locks: LockService,
    readonly store: Backend,
  ) {}

  /** A non-atomic read-modify-write that loses updates if two calls overlap. */
  @WithLock('balance:<userId>', { waitTimeout: 20_000 })
  async deposit(userId: string): Promise<void> {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    const counter = `${userId}:balance`;
    const value = Number((await this.store.get(counter)) ?? '0');
    await sleep(5);
    await this.store.set(counter, String(value + 1));
    this.running--;
  }

  @WithLock('by-name:<userId>')
  async byName(userId: unknown) {
    return this.record(userId);
  }

  @WithLock('by-path:<dto.user.id>')
  async byPath(dto: Dto) {
    return this.record(dto);
  }

  @WithLock('by-position:<0>:<1.id>')
  async byPosition(first: unknown, second: { id: unknown }) {
    return this.record([first, second]);
  }

  @WithLock('transfer:<from.id>:<to.id>')
  async mixed(from: { id: string }, to: { id: string }) {
    return this.record([from, to]);
  }

  @WithLock((order: { id: string }) => `order:${order.id}`)
  async byFunction(order: { id: string }) {
    return this.record(order);
  }

  @WithLock(['account:<from>', 'account:<to>'], { waitTimeout: 20_000 })
  async transfer(from: string, to: string) {
    await sleep(1);
    return this.record([from, to]);
  }

  @WithLock('skip:<0>', { onLocked: 'skip' })
  async skippable(_id: string, hold: Promise<void>) {
    this.skippedRuns++;
    await hold;
    return 'ran';
  }

  @WithLock('throttle:<id>', { holdFor: 600 })
  async throttled(id: string) {
    return `submitted ${id}`;
  }

  @WithLock('nested:<id>')
  async outer(id: string, hold: Promise<void>) {
    const outerLock = this.locks.current();
    const inner = await this.inner(id);
    await hold;
    return { outerLock, inner };
  }

  @WithLock('nested:<0>')
  async inner(_id: string) {
    return this.locks.current();
  }

  @WithLock('lost:<0>', { ttl: 300 })
  async loseLock(_id: string) {
    const lock = this.locks.current() as Lock;
    await this.store.del(lock.key);
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    return 'finished after the loss';
  }

  @WithLock('throws:<0>')
  async fails(_id: string, error: Error) {
    throw error;
  }

  private record(_value: unknown) {
    const lock = this.locks.current() as Lock;
    this.keys.push(lock.key);
    return lock;
  }
}

describe.each(backends)('@WithLock on a service method (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let store: Backend;
  let accounts: Accounts;
  let close: () => Promise<void>;

  beforeAll(async () => {
    store = makeBackend();
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot(store.options({ keyPrefix: prefix }))],
      providers: [Accounts],
    })
      .overrideProvider(Accounts)
      .useFactory({
        factory: (locks: LockService) => new Accounts(locks, store),
        inject: [LockService],
      })
      .compile();
    await module.init();
    accounts = module.get(Accounts);
    close = () => module.close();
  });

  afterAll(async () => {
    await close();
    await store.close();
  });

  it('serialises calls with the same argument: no update lost, never two at once', async () => {
    const user = `${prefix}same`;
    await Promise.all(Array.from({ length: 20 }, () => accounts.deposit(user)));
    expect(Number(await store.get(`${user}:balance`))).toBe(20);
    expect(accounts.maxRunning).toBe(1);
  });

  it('runs calls with different arguments in parallel', async () => {
    accounts.maxRunning = 0;
    await Promise.all(Array.from({ length: 6 }, (_, i) => accounts.deposit(`${prefix}user${i}`)));
    expect(accounts.maxRunning).toBeGreaterThan(1);
  });

  it('builds keys from names, property paths, positions, mixed text, functions and arrays', async () => {
    expect((await accounts.byName('42')).key).toBe(`${prefix}by-name:42`);
    expect((await accounts.byName(7)).key).toBe(`${prefix}by-name:7`);
    expect((await accounts.byPath({ user: { id: 'u1' } })).key).toBe(`${prefix}by-path:u1`);
    expect((await accounts.byPosition('a', { id: 'b' })).key).toBe(`${prefix}by-position:a:b`);
    expect((await accounts.mixed({ id: 'x' }, { id: 'y' })).key).toBe(`${prefix}transfer:x:y`);
    expect((await accounts.byFunction({ id: 'o9' })).key).toBe(`${prefix}order:o9`);
    expect((await accounts.transfer('b', 'a')).key).toBe(`${prefix}account:a`);
    expect(await store.exists(`${prefix}account:a`, `${prefix}account:b`)).toBe(0);
  });

  it('escapes values so that user input cannot change the key structure', async () => {
    const keys = await Promise.all([
      accounts.byName('1:admin'),
      accounts.byName('*'),
      accounts.byName('{tag}'),
      accounts.byName('a b%'),
    ]);
    expect(keys.map((lock) => lock.key)).toEqual([
      `${prefix}by-name:1%3Aadmin`,
      `${prefix}by-name:%2A`,
      `${prefix}by-name:%7Btag%7D`,
      `${prefix}by-name:a%20b%25`,
    ]);
    const [first, second] = await Promise.all([
      accounts.mixed({ id: '1:admin' }, { id: 'x' }),
      accounts.mixed({ id: '1' }, { id: 'admin:x' }),
    ]);
    expect(first.key).not.toBe(second.key);
  });

  it('takes the keys of a multi-key lock in sorted order, so a,b and b,a cannot deadlock', async () => {
    const calls = Array.from({ length: 30 }, (_, i) =>
      i % 2 ? accounts.transfer('a', 'b') : accounts.transfer('b', 'a'),
    );
    await expect(Promise.all(calls)).resolves.toHaveLength(30);
  });

  it("fails a second concurrent call at once by default (the decorator's waitTimeout is 0)", async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const first = accounts.outer('busy', hold);
    await sleep(50);
    await expect(accounts.inner('busy')).rejects.toBeInstanceOf(LockNotAcquiredError);
    release();
    await first;
  });

  it("onLocked: 'skip' returns undefined without running the method, and logs it at verbose", async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    accounts.skippedRuns = 0;
    const verbose = jest.spyOn(Logger.prototype, 'verbose').mockImplementation(() => undefined);
    try {
      const first = accounts.skippable('s', hold);
      await sleep(50);
      expect(await accounts.skippable('s', Promise.resolve())).toBeUndefined();
      expect(accounts.skippedRuns).toBe(1);
      expect(verbose).toHaveBeenCalledWith(
        'Accounts.skippable skipped: Lock "skip:s" is held by another owner; gave up after waiting 0 ms',
      );
      release();
      expect(await first).toBe('ran');
    } finally {
      verbose.mockRestore();
    }
  });

  it('holdFor keeps the lock until the window ends, then lets the next call in', async () => {
    expect(await accounts.throttled('t')).toBe('submitted t');
    expect(await store.pttl(`${prefix}throttle:t`)).toBeGreaterThan(0);
    const error = await accounts.throttled('t').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error).toMatchObject({ throttled: true });
    expect((error as LockNotAcquiredError).retryAfterMs).toBeGreaterThan(0);
    await sleep(700);
    expect(await accounts.throttled('t')).toBe('submitted t');
  });

  it('is reentrant within one async call chain, and still excludes other callers', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const running = accounts.outer('r', hold);
    await sleep(50);
    await expect(accounts.inner('r')).rejects.toBeInstanceOf(LockNotAcquiredError);
    release();
    const { outerLock, inner } = await running;
    expect(inner).toBe(outerLock);
    expect(await store.exists(`${prefix}nested:r`)).toBe(0);
  });

  it('shows the running method its lock through LockService.current()', async () => {
    const lock = await accounts.byName('current');
    expect(lock.key).toBe(`${prefix}by-name:current`);
    expect(Number.isSafeInteger(lock.fencingToken)).toBe(true);
    expect(lock.signal).toBeInstanceOf(AbortSignal);
    expect(accounts.locks.current()).toBeUndefined();
  });

  it('rejects with LockLostError after the method settles when the lock was lost', async () => {
    await expect(accounts.loseLock('l')).rejects.toBeInstanceOf(LockLostError);
  });

  it("passes the method's own errors through untouched and releases the lock", async () => {
    const own = new HttpException('teapot', 418);
    await expect(accounts.fails('e', own)).rejects.toBe(own);
    expect(await store.exists(`${prefix}throws:e`)).toBe(0);
  });
});

describe('@WithLock key values are checked before Redis is touched', () => {
  let server: RedisServer;
  let accounts: Accounts;
  let close: () => Promise<void>;

  beforeAll(async () => {
    server = await RedisServer.start();
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.url, commandTimeout: 300 })],
      providers: [Accounts],
    })
      .overrideProvider(Accounts)
      .useFactory({
        factory: (locks: LockService) => new Accounts(locks, undefined as never),
        inject: [LockService],
      })
      .compile();
    await module.init();
    accounts = module.get(Accounts);
    close = () => module.close();
    // With Redis gone, a call that reached it would fail with LockConnectionError instead.
    await server.kill();
  });

  afterAll(async () => {
    await close();
    await server.stop();
  });

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['an empty string', ''],
    ['a plain object', { id: 1 }],
    ['an array', [1, 2]],
    ['NaN', Number.NaN],
    ['a symbol', Symbol('x')],
  ])('refuses %s with LockKeyResolutionError', async (_, value) => {
    const error = await accounts.byName(value).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockKeyResolutionError);
    expect((error as Error).message).toMatch(/Accounts\.byName.*<userId>/);
  });

  it('refuses a missing property on a path', async () => {
    await expect(accounts.byPath({} as Dto)).rejects.toThrow(/<dto\.user\.id>.*undefined/);
  });
});

describe('@WithLock at boot', () => {
  const boot = async (provider: new (...args: never[]) => object) => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: sharedRedisUrl() })],
      providers: [provider],
    }).compile();
    try {
      await module.init();
    } finally {
      await module.close();
    }
  };

  it('fails on an unknown placeholder, naming class, method, placeholder and parameters', async () => {
    @Injectable()
    class Typo {
      @WithLock('user:<userID>')
      async run(userId: string, amount: number) {
        return [userId, amount];
      }
    }
    const error = await boot(Typo).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockKeyResolutionError);
    expect((error as Error).message).toContain('Typo.run');
    expect((error as Error).message).toContain('<userID>');
    expect((error as Error).message).toContain('(userId, amount)');
  });

  it('fails on a position past the parameters and on an unbalanced template', async () => {
    @Injectable()
    class Position {
      @WithLock('x:<2>')
      async run(a: string) {
        return a;
      }
    }
    @Injectable()
    class Unbalanced {
      @WithLock('x:<a')
      async run(a: string) {
        return a;
      }
    }
    await expect(boot(Position)).rejects.toThrow(/<2> matches no parameter/);
    await expect(boot(Unbalanced)).rejects.toThrow(/unbalanced "<"/);
  });

  it('fails on bad options, naming the method', async () => {
    @Injectable()
    class BadOptions {
      @WithLock('x', { ttl: -5 })
      async run() {}
    }
    @Injectable()
    class BadOnLocked {
      @WithLock('x', { onLocked: 'wait' as never })
      async run() {}
    }
    const error = await boot(BadOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as Error).message).toMatch(/BadOptions\.run.*"ttl"/);
    await expect(boot(BadOnLocked)).rejects.toThrow(/BadOnLocked\.run.*"onLocked"/);
  });
});
