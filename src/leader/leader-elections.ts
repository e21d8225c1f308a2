import { Inject, Injectable, Logger } from '@nestjs/common';
import { BehaviorSubject, distinctUntilChanged, type Observable } from 'rxjs';
import type { LockEngine } from '../engine/lock-engine.js';
import { leaderIdOf } from '../keys/lock-keys.js';
import { LOCK_ENGINE, LOCK_OPTIONS } from '../lock.constants.js';
import { LockOptionsError } from '../lock.errors.js';
import { lockInfoOf } from '../lock-info.js';
import { facetOf } from '../store/capabilities.js';
import type { ResolvedLockOptions } from '../options/lock-options.interface.js';
import { checkTtl } from '../options/option-checks.js';
import { Candidacy } from './candidacy.js';
import type { Leadership, LeaderOptions } from './leadership.js';

/**
 * The elections this instance stands in, one candidacy per name, and what each reports. Not
 * exported: `LeaderService` is its face, the explorer registers the `@Leader` methods, and
 * shutdown steps down from every election before the lock engine drains.
 */
@Injectable()
export class LeaderElections {
  private readonly logger = new Logger('LeaderElections');
  private readonly candidacies = new Map<string, Candidacy>();
  private readonly states = new Map<string, BehaviorSubject<boolean>>();
  private stopping?: Promise<void>;

  constructor(
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /**
   * Registers this instance's candidacy in election `name`, whose leader runs `lead`; it stands
   * once {@link start} is called.
   * @param where who asked, for the errors
   * @throws LockKeyResolutionError for a bad name, LockOptionsError for bad options, a second
   *   candidacy for the same name, or a store that cannot hold elections
   */
  register(
    name: unknown,
    options: LeaderOptions,
    lead: (leadership: Leadership) => unknown,
    where: string,
  ): void {
    const id = leaderIdOf(this.options.keyPrefix, name);
    const { capabilities } = this.engine.store;
    if (capabilities.leadership === false) {
      throw new LockOptionsError(
        '@Leader',
        name,
        `nothing with ${capabilities.backend}${capabilities.why?.leadership ?? ''}`,
        where,
      );
    }
    const ttl = options?.ttl === undefined ? this.options.ttl : checkTtl('ttl', options.ttl, where);
    const electionName = name as string;
    if (this.candidacies.has(electionName)) {
      throw new LockOptionsError(
        'name',
        electionName,
        'a name that no other @Leader method of this app stands for',
        where,
      );
    }
    const acquire = { ttl, waitTimeout: Infinity, watchdog: true };
    const events = {
      leading: (leading: boolean) => this.state(electionName).next(leading),
      warn: (message: string) => this.logger.warn(message),
      log: (message: string) => this.logger.log(message),
    };
    const candidacy = new Candidacy(electionName, id, acquire, lead, this.engine, events);
    this.candidacies.set(electionName, candidacy);
  }

  /** Stands in every registered election (once the app has booted). */
  start(): void {
    if (this.stopping) return;
    for (const candidacy of this.candidacies.values()) candidacy.start();
  }

  isLeader(name: string): boolean {
    return this.candidacies.get(name)?.leading ?? false;
  }

  /** This instance's leadership of `name`: now, then each change. */
  observe(name: string): Observable<boolean> {
    return this.state(name).pipe(distinctUntilChanged());
  }

  async resign(name: string): Promise<void> {
    await this.candidacies.get(name)?.resign();
  }

  /**
   * Who holds election `name`'s lock, as the store says: the holder's `instanceId` and
   * fencing token; `null` when nobody holds it, or while it is reserved for the first standby
   * in line, which has not taken it yet.
   */
  async holder(name: string): Promise<{ owner: string; epoch: number } | null> {
    const { key } = leaderIdOf(this.options.keyPrefix, name);
    const [holder] = lockInfoOf(
      key,
      await facetOf(this.engine.store, 'inspect', 'LeaderService.leader')(key),
    ).holders;
    if (holder?.fencingToken === undefined) return null;
    return { owner: holder.owner, epoch: holder.fencingToken };
  }

  /**
   * Shutdown, before the lock engine drains: steps down from every election at once (each
   * term's signal aborts, then its lock is released, so that a standby takes over without
   * waiting for this instance's drain), and stands no more.
   */
  async stop(): Promise<void> {
    this.stopping ??= Promise.all(
      [...this.candidacies.values()].map((candidacy) => candidacy.stop()),
    ).then(() => undefined);
    await this.stopping;
  }

  /**
   * Shutdown, once the lock engine has refused the waits in line (giving their places back):
   * resolves when every candidacy has stopped; the observers complete.
   */
  async stopped(): Promise<void> {
    await this.stop();
    await Promise.all([...this.candidacies.values()].map((candidacy) => candidacy.ended()));
    for (const state of this.states.values()) state.complete();
  }

  private state(name: string): BehaviorSubject<boolean> {
    let state = this.states.get(name);
    if (!state) this.states.set(name, (state = new BehaviorSubject(false)));
    return state;
  }
}
