import { monotonicNow } from '../engine/clock.js';
import type { LockEngine } from '../engine/lock-engine.js';
import type { LockId } from '../keys/lock-keys.js';
import type { HeldLock } from '../engine/held-lock.js';
import { LockLostError, LockOptionsError, messageOf } from '../lock.errors.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import type { Leadership } from './leadership.js';

/** How long an instance waits before it stands again after its term failed or its wait did. */
export const STAND_AGAIN_DELAY = 1_000;

/** How a term ended. */
type TermEnd = 'lost' | 'resigned' | 'stopped' | 'failed';

/** One term of leadership: the election's lock, and the signal the leader's work listens to. */
class Term implements Leadership {
  private readonly controller = new AbortController();
  /** Settles once the term has ended and its lock was given back (or was lost). */
  readonly ended: Promise<TermEnd>;
  private finish!: (how: TermEnd) => void;
  private ending?: TermEnd;

  constructor(
    readonly name: string,
    readonly lock: HeldLock,
  ) {
    this.ended = new Promise((resolve) => (this.finish = resolve));
  }

  get epoch(): number {
    return this.lock.fencingToken;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  throwIfLost(): void {
    if (this.controller.signal.aborted) {
      const reason: unknown = this.controller.signal.reason;
      throw reason instanceof LockLostError
        ? reason
        : new LockLostError(this.lock.name, `the leadership of "${this.name}" ended`);
    }
    this.lock.throwIfLost();
  }

  /** Whether the term leads now: not ended, and its lock still within its validity. */
  get current(): boolean {
    return (
      !this.controller.signal.aborted && this.lock.held && monotonicNow() < this.lock.validUntil
    );
  }

  /** Aborts the signal; `false` when the term had already ended. */
  abort(how: TermEnd, reason: unknown): boolean {
    if (this.ending) return false;
    this.ending = how;
    this.controller.abort(reason);
    return true;
  }

  settle(): void {
    if (this.ending) this.finish(this.ending);
  }
}

/** What a candidacy reports to the rest of the module. */
export interface CandidacyEvents {
  /** This instance's leadership began (`true`) or ended (`false`). */
  leading(leading: boolean): void;
  /** Problems that no caller waits for. */
  warn(message: string): void;
  /** Leadership changes, for the log. */
  log(message: string): void;
}

/**
 * This instance's candidacy in one election: it waits in the store's line for the election's
 * lock (with no timeout), leads while it holds it, and stands again after its term, until the
 * app shuts down. A term's signal aborts before the lock is given back (resign, shutdown, a
 * failed method), and in the same tick as the lock's own signal when the lock is lost: the
 * watchdog reports a loss once its validity runs out, before the store lets anybody else in.
 */
export class Candidacy {
  private term?: Term;
  private running?: Promise<void>;
  private stopped = false;
  private pause?: { timer: NodeJS.Timeout; resolve: () => void };

  /**
   * @param id the election's lock
   * @param options how it is acquired: with no wait timeout and the watchdog
   * @param lead the leader's work, called when a term begins
   */
  constructor(
    readonly name: string,
    private readonly id: LockId,
    private readonly options: ResolvedAcquireOptions,
    private readonly lead: (leadership: Leadership) => unknown,
    private readonly engine: LockEngine,
    private readonly events: CandidacyEvents,
  ) {}

  /** Whether this instance leads now. */
  get leading(): boolean {
    return this.term?.current ?? false;
  }

  /** Stands for election (once). */
  start(): void {
    this.running ??= this.stand();
  }

  /**
   * Steps down: the term's signal aborts, the lock is released, so that the first standby in
   * line takes over at once; this instance then stands again, behind it. Nothing when it does
   * not lead.
   */
  async resign(): Promise<void> {
    const term = this.term;
    if (term) await this.end(term, 'resigned', 'this instance resigned the leadership');
  }

  /**
   * Shutdown, first part: steps down if it leads (the signal aborts, the lock is released) and
   * stands no more. A wait in line goes on until the lock engine's shutdown refuses it, which
   * gives the place back; {@link ended} resolves then.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pause) {
      clearTimeout(this.pause.timer);
      this.pause.resolve();
    }
    const term = this.term;
    if (term) await this.end(term, 'stopped', 'the instance is shutting down');
  }

  /** Resolves once the candidacy has stopped standing (see {@link stop}). */
  async ended(): Promise<void> {
    await this.running;
  }

  private async stand(): Promise<void> {
    while (!this.stopped) {
      const lock = await this.nextTerm();
      if (!lock) continue;
      if (this.stopped) {
        await this.engine.releaseAfterWork(lock);
        break;
      }
      const how = await this.serve(lock);
      // Without a line in the store, a resigner asking again at once could beat the standbys
      // that its release woke: it lets them have a ttl.
      const queueing = this.engine.store.capabilities.queueing;
      if (how === 'failed') await this.sleep(STAND_AGAIN_DELAY);
      else if (how === 'resigned' && !queueing) await this.sleep(this.options.ttl);
    }
  }

  /** Waits in line for the lock; `undefined` when the wait failed or was abandoned. */
  private async nextTerm(): Promise<HeldLock | undefined> {
    try {
      return await this.engine.acquire(this.id, this.options);
    } catch (error) {
      if (this.stopped) return undefined;
      if (error instanceof LockOptionsError) {
        // No later attempt can do better (a ttl beyond what a ZooKeeper session allows).
        this.events.warn(`Leader election "${this.name}": cannot stand: ${error.message}`);
        this.stopped = true;
        return undefined;
      }
      this.events.warn(
        `Leader election "${this.name}": could not stand, trying again in ` +
          `${STAND_AGAIN_DELAY} ms: ${messageOf(error)}`,
      );
      await this.sleep(STAND_AGAIN_DELAY);
      return undefined;
    }
  }

  /** Leads for one term; resolves once it has ended and its lock is given back. */
  private async serve(lock: HeldLock): Promise<TermEnd> {
    const term = new Term(this.name, lock);
    this.term = term;
    const lost = () => {
      const reason = lock.signal.reason as unknown;
      if (!term.abort('lost', reason)) return;
      this.endTerm(term, `it was lost (${messageOf(reason)})`);
      term.settle();
    };
    if (lock.signal.aborted) lost();
    else lock.signal.addEventListener('abort', lost, { once: true });
    if (!term.signal.aborted) {
      this.events.leading(true);
      this.events.log(`Leading "${this.name}" (epoch ${term.epoch})`);
      try {
        const work = this.lead(term);
        if (work instanceof Promise) work.catch((error: unknown) => this.fail(term, error));
      } catch (error) {
        this.fail(term, error);
      }
    }
    return term.ended;
  }

  private fail(term: Term, error: unknown): void {
    this.events.warn(
      `Leader election "${this.name}": the leader's method failed, giving the leadership up: ` +
        messageOf(error),
    );
    void this.end(term, 'failed', `the leader's method failed: ${messageOf(error)}`);
  }

  /** Aborts the term's signal, then gives its lock back. */
  private async end(term: Term, how: TermEnd, reason: string): Promise<void> {
    if (term.abort(how, new LockLostError(this.id.name, reason))) {
      this.endTerm(term, reason);
      await this.engine.releaseAfterWork(term.lock);
      term.settle();
    }
    await term.ended;
  }

  private endTerm(term: Term, why: string): void {
    if (this.term === term) this.term = undefined;
    this.events.leading(false);
    this.events.log(`No longer leading "${this.name}" (epoch ${term.epoch}): ${why}`);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pause = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.pause = { timer, resolve };
    });
  }
}
