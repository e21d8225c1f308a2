import { LockError } from '../../src/lock.errors.js';
import type { Lock, MultiLock } from '../../src/lock.js';
import type { AcquireOptions } from '../../src/options/lock-options.interface.js';
import type { Call, Checker, Holding, KeyKind } from './checker.js';
import { KEY_PREFIX, type Instance } from './instance.js';
import { ELECTION } from './leader.js';
import type { Random } from './random.js';
import type { World } from './world.js';

/** Why a caller gives up waiting, when the workload aborts it. */
class CallerAbort extends Error {
  override name = 'CallerAbort';
}

/** What the callers of a run share. */
export interface CallerRun {
  readonly world: World;
  readonly kinds: ReadonlyMap<string, KeyKind>;
  readonly checker: Checker;
  /** The run's instances, to hand a lock off to. */
  readonly peers: readonly Instance[];
  /** Told of an extend, or a call that does not wait, as its request leaves (see `Nemesis`). */
  readonly sent: (instance: Instance, what: string) => void;
}

/** One simulated caller: a few calls, one after the other, on the seed's keys. */
export class Caller {
  done = false;

  private readonly world: World;
  private readonly kinds: ReadonlyMap<string, KeyKind>;
  private readonly checker: Checker;
  private readonly peers: readonly Instance[];

  constructor(
    readonly name: string,
    readonly instance: Instance,
    private readonly random: Random,
    private readonly run: CallerRun,
  ) {
    ({ world: this.world, kinds: this.kinds, checker: this.checker, peers: this.peers } = run);
  }

  /** Runs its calls (in its instance's context), then marks itself done. */
  start(calls: number): void {
    void this.world.within(this.instance, async () => {
      for (let i = 0; i < calls && !this.instance.shutdown; i++) {
        await this.sleep(this.random.int(0, 400));
        await this.one();
      }
      this.done = true;
      this.world.log(`done   ${this.name}`);
    });
  }

  private async one(): Promise<void> {
    const key = this.random.pick([...this.kinds.keys()].filter((name) => name !== ELECTION));
    const options = this.options(key);
    const style = this.random.pick(['using', 'using', 'acquire', 'try'] as const);
    // Sometimes two mutexes at once, all or none (in the order of their keys, whatever this).
    const other = this.random.pick([...this.kinds.keys()].filter((name) => this.plain(name)));
    const keys =
      this.plain(key) && other !== key && this.random.chance(0.25) ? [other, key] : [key];
    const call: Call = {
      caller: this.name,
      place: this.instance,
      key: keys.join('+'),
      startedAt: this.world.now(),
      waitTimeout: style === 'try' ? 0 : (options.waitTimeout ?? 0),
    };
    this.checker.calls.push(call);
    const shown = Object.entries(options).map(([name, value]) =>
      name === 'signal' ? 'abortable' : `${name}=${String(value)}`,
    );
    this.world.log(`call   ${this.name} ${style} ${call.key} ${shown.join(' ')}`);
    const { locks } = this.instance;
    // One key is named as a key, not as a list of one, which takes the several-keys path.
    const [one] = keys.length === 1 ? keys : [];
    const work = (lock: Lock) => this.work(call, lock, options);
    try {
      if (style === 'using') {
        await (one ? locks.using(one, work, options) : locks.using(keys, work, options));
      } else {
        const lock =
          style === 'acquire'
            ? await (one ? locks.acquire(one, options) : locks.acquire(keys, options))
            : await this.tryAcquire(keys, options);
        if (lock) await this.work(call, lock, options, true);
        else this.settle(call, 'busy');
      }
    } catch (error) {
      if (call.settledAt === undefined) this.settle(call, (error as Error).name);
      else this.world.log(`ended  ${this.name} ${call.key} ${(error as Error).name}`);
      if (!(error instanceof LockError || error instanceof CallerAbort)) {
        this.checker.fail('unexpected error', `${this.name}: ${String(error)}`);
      }
    }
  }

  /** `tryAcquire`, its first request aimed at by the nemesis. */
  private tryAcquire(keys: string[], options: AcquireOptions): Promise<Lock | null> {
    const { locks } = this.instance;
    const trying =
      keys.length === 1 ? locks.tryAcquire(keys[0], options) : locks.tryAcquire(keys, options);
    this.run.sent(this.instance, 'a call that does not wait');
    return trying;
  }

  /** Whether `name` is a mutex without a throttle. */
  private plain(name: string): boolean {
    const kind = this.kinds.get(name);
    return kind?.type === 'mutex' && !kind.throttle && name !== ELECTION;
  }

  private options(key: string): AcquireOptions {
    const kind = this.kinds.get(key)!;
    const options: AcquireOptions = {
      ttl: this.random.int(50, 1_000),
      waitTimeout: this.random.pick([0, this.random.int(1, 500), this.random.int(500, 3_000)]),
    };
    if (kind.type === 'semaphore') {
      options.limit = kind.limit;
      options.permits = this.random.int(1, kind.limit);
    }
    if (kind.type === 'rw') options.mode = this.random.pick(['read', 'write'] as const);
    if (kind.type === 'mutex' && kind.throttle) {
      // Long enough that the watchdog keeps it through a quiet run's latencies.
      options.ttl = this.random.int(300, 1_000);
      options.holdFor = this.random.int(100, 1_500);
    }
    if (this.random.chance(0.15)) {
      const abort = new AbortController();
      const ms = this.random.int(0, 1_500);
      setTimeout(() => abort.abort(new CallerAbort('aborted')), ms);
      options.signal = abort.signal;
    }
    if (this.random.chance(0.15) && options.holdFor === undefined) options.watchdog = false;
    return options;
  }

  /** Holds the lock for a while (extending it, maybe), then lets it go. */
  private async work(call: Call, lock: Lock, options: AcquireOptions, release = false) {
    this.settle(call, `got fence=${lock.fencingToken}`);
    // Several keys: a holding of each, by its own lock.
    const parts = 'locks' in lock ? (lock as MultiLock).locks : [lock];
    const holdings = parts.map((part): Holding => ({
      caller: this.name,
      place: this.instance,
      key: parts.length > 1 ? part.key.slice(KEY_PREFIX.length) : call.key,
      lock: part,
      permits: options.permits ?? 1,
      mode: options.mode,
    }));
    for (const holding of holdings) this.checker.held(holding);
    try {
      await this.sleep(this.random.int(0, 1_200));
      if (this.random.chance(0.3)) {
        // Half of the extends shorten the lock: its validity must shrink as the request leaves.
        const half = Math.max(30, Math.floor((options.ttl ?? 300) / 2));
        const ttl = this.random.chance(0.5)
          ? this.random.int(30, half)
          : this.random.int(50, 1_000);
        const extending = lock.extend(ttl);
        this.run.sent(this.instance, 'an extend');
        const extended = await extending;
        this.world.log(`extend ${this.name} ${call.key} ${extended}`);
        await this.sleep(this.random.int(0, 600));
      }
    } finally {
      for (const holding of holdings) this.checker.ended(holding);
    }
    this.world.log(`free   ${this.name} ${call.key}`);
    if (!release) return;
    const kind = this.kinds.get(call.key);
    const peers = this.peers.filter((peer) => peer !== this.instance && !peer.crashed);
    const to = this.random.pick(peers.filter((peer) => !peer.shutdown));
    const handles = this.instance.engine.store.capabilities.handles;
    if (kind?.type === 'mutex' && !kind.throttle && handles && to && this.random.chance(0.3)) {
      await this.handOff(call.key, lock, to);
      return;
    }
    const released = await lock.release();
    this.world.log(`freed  ${this.name} ${call.key} ${released}`);
  }

  /**
   * Hands the lock off to another instance, which adopts it, holds it a while and releases
   * it, as a job queue's worker would take over a job begun elsewhere. The adopter goes on by
   * itself (it counts in its instance's `adopting` until it is done): should it be killed
   * meanwhile, this caller does not wait for it.
   */
  private async handOff(key: string, lock: Lock, to: Instance): Promise<void> {
    const handle = await lock.handOff();
    this.world.log(`handed ${this.name} ${key} to ${to.name}`);
    const caller = `${this.name}>${to.name}`;
    to.adopting++;
    void this.world.within(to, async () => {
      try {
        const adopted = await to.locks.adopt(handle);
        this.world.log(`adopt  ${caller} ${key} fence=${adopted.fencingToken}`);
        const holding = { caller, place: to, key, lock: adopted, permits: 1, adopted: true };
        this.checker.held(holding);
        try {
          await this.sleep(this.random.int(0, 600));
        } finally {
          this.checker.ended(holding);
        }
        this.world.log(`freed  ${caller} ${key} ${await adopted.release()}`);
      } catch (error) {
        this.world.log(`ended  ${caller} ${key} ${(error as Error).name}`);
        if (!(error instanceof LockError)) {
          this.checker.fail('unexpected error', `${caller}: ${String(error)}`);
        }
      } finally {
        to.adopting--;
      }
    });
  }

  private settle(call: Call, outcome: string): void {
    call.settledAt = this.world.now();
    this.world.log(`settle ${this.name} ${call.key} ${outcome}`);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
