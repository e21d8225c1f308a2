import { AsyncLocalStorage } from 'node:async_hooks';
import { withGlobal, type Clock } from '@sinonjs/fake-timers';
import type { Random } from './random.js';

/** Where Date.now() starts: any fixed moment will do, as long as every run starts there. */
const EPOCH = 1_767_225_600_000;

/** One simulated app instance, as the world sees it: which of its faults are on. */
export interface Place {
  readonly name: string;
  /** Virtual ms until which the process is stopped (SIGSTOP): its timers and deliveries wait. */
  pausedUntil: number;
  /** Virtual ms until which its connection to the store carries nothing, either way. */
  stalledUntil: number;
  /**
   * Virtual ms until which its notices wait while requests and replies flow: a Redis client's
   * pub/sub connection is a connection of its own, which can lag behind the other.
   */
  noticesStalledUntil: number;
  /** Killed: nothing more runs in it, and nothing more leaves it. */
  crashed: boolean;
  /**
   * Its monotonic clock (`performance.now()` in its code): `clockOffset + t × clockRate`, for
   * the virtual time t, so that it drifts from the store's clock by up to the seed's rate.
   */
  readonly clockRate: number;
  readonly clockOffset: number;
  /** Timer callbacks that came due while it was stopped, run when it goes on. */
  readonly deferred: (() => void)[];
}

interface TimerEntry {
  cancelled: boolean;
  deferred: boolean;
}

type TimerFunction = (callback: () => void, ms?: number) => unknown;
type ClearFunction = (handle: unknown) => void;
const TIMER_NAMES = ['setTimeout', 'setInterval', 'setImmediate'] as const;
const CLEAR_NAMES = ['clearTimeout', 'clearInterval', 'clearImmediate'] as const;

/**
 * Virtual time for a whole simulated run: one fake clock for every instance and the store,
 * timers that belong to the instance that set them (a stopped instance's fire when it goes on,
 * a killed one's never), a seeded `Math.random`, and the trace of what happened when.
 */
export class World {
  readonly clock: Clock;
  readonly trace: string[] = [];
  private readonly context = new AsyncLocalStorage<Place>();
  private readonly entries = new WeakMap<object, TimerEntry>();
  private readonly saved: Record<string, unknown> = {};
  private readonly realRandom = Math.random;
  private readonly realImmediate = setImmediate;

  constructor(
    random: Random,
    private readonly recording: boolean,
  ) {
    this.clock = withGlobal(globalThis).install({
      now: EPOCH,
      toFake: [...TIMER_NAMES, ...CLEAR_NAMES, 'Date', 'performance'],
    });
    const performance = this.clock.performance as { now(): number };
    const now = performance.now.bind(performance);
    performance.now = () => {
      const place = this.context.getStore();
      return place ? this.localNow(place, now()) : now();
    };
    const seeded = random.fork();
    Math.random = () => seeded.next();
    const scope = globalThis as unknown as Record<string, unknown>;
    for (const name of TIMER_NAMES) {
      const fake = (this.saved[name] = scope[name]) as TimerFunction;
      scope[name] = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
        this.timer(fake, () => callback(...args), ms, name === 'setInterval');
    }
    for (const name of CLEAR_NAMES) {
      const fake = (this.saved[name] = scope[name]) as ClearFunction;
      scope[name] = (handle: unknown) => {
        const entry = typeof handle === 'object' && handle ? this.entries.get(handle) : undefined;
        if (entry) entry.cancelled = true;
        fake(handle);
      };
    }
  }

  /**
   * Fires the next timer, then lets every promise it settled run its continuations: one turn
   * of the real event loop drains them all, as nothing in a run waits for anything real.
   */
  async step(): Promise<void> {
    this.clock.next();
    await new Promise((resolve) => this.realImmediate(resolve));
  }

  /** Puts the real timers, clock and `Math.random` back. */
  uninstall(): void {
    // An enabled AsyncLocalStorage costs every promise of the process something, for good.
    this.context.disable();
    Object.assign(globalThis, this.saved);
    Math.random = this.realRandom;
    this.clock.uninstall();
  }

  /** Virtual ms since the run started. */
  now(): number {
    return this.clock.now - EPOCH;
  }

  /** What `performance.now()` says in `place`'s code at the virtual monotonic ms `at`. */
  localNow(place: Place, at = this.now()): number {
    return place.clockOffset + at * place.clockRate;
  }

  log(line: string): void {
    if (this.recording) this.trace.push(`${String(this.now()).padStart(7)}  ${line}`);
  }

  /** Runs `fn` as code of `place`: the timers it sets, and their promises, belong to it. */
  within<T>(place: Place, fn: () => T): T {
    return this.context.run(place, fn);
  }

  /** Runs `fn` after `ms` virtual ms, as the world (the network, the store, the faults). */
  after(ms: number, fn: () => void): void {
    (this.saved.setTimeout as TimerFunction)(fn, Math.max(0, ms));
  }

  /** Stops `place` for `ms`: its timers and what is delivered to it wait until then. */
  pause(place: Place, ms: number): void {
    place.pausedUntil = Math.max(place.pausedUntil, this.now() + ms);
    this.after(ms, () => {
      if (this.now() < place.pausedUntil) return;
      for (const run of place.deferred.splice(0)) run();
    });
  }

  /** Timers set by a fake-timer function, tied to the instance whose code set them. */
  private timer(fake: TimerFunction, run: () => void, ms: number | undefined, repeats: boolean) {
    const place = this.context.getStore();
    if (place === undefined) return fake(run, ms);
    const entry: TimerEntry = { cancelled: false, deferred: false };
    const fire = () => {
      if (entry.cancelled || place.crashed) {
        if (place.crashed && repeats) (this.saved.clearInterval as ClearFunction)(handle);
        return;
      }
      if (place.pausedUntil > this.now()) {
        if (!entry.deferred) place.deferred.push(resume);
        entry.deferred = true;
        return;
      }
      this.context.run(place, run);
    };
    const resume = () => {
      entry.deferred = false;
      fire();
    };
    const handle = fake(fire, ms === undefined ? ms : ms / place.clockRate);
    if (typeof handle === 'object' && handle) this.entries.set(handle, entry);
    return handle;
  }
}
