import { LockQuorumError } from '../../lock.errors.js';
import { driftOf, monotonicNow } from '../../engine/clock.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import type {
  AcquireAttempt,
  LockEvent,
  LockStore,
  ReleaseOutcome,
  RenewalEntry,
  StoredLock,
} from '../lock-store.interface.js';
import type { RedisLockStore } from '../redis/redis.store.js';
import { REDLOCK_CAPABILITIES } from './redlock-capabilities.js';
import { askMasters, count, decidedOn, type RedlockMaster, type Tally } from './ask-masters.js';
import { renewalOutcome } from './redlock-renewals.js';
import { subscribeOnMasters } from './redlock-subscription.js';
import { transferOnMasters, type TransferParams } from './redlock-transfer.js';
import { refusalAcross } from './redlock-refusals.js';
import { majorityView } from './redlock-view.js';
import { unsplit, type Vote } from './split-votes.js';

/**
 * RedLock: the same lock, with the same token, on N independent Redis masters. A lock is held
 * when a majority (⌊N/2⌋ + 1) granted it and time is left of its validity (`ttl − elapsed −
 * drift`, counted from before the first request); the caller's validity counts from the same
 * moment. Each master answers within its own timeout, and an operation is decided as soon as
 * its outcome is known, so a slow or dead minority costs nothing. Releases, renewals and
 * `isLocked` work across the majority in the same way; a renewal that a majority confirmed
 * also puts the lock back on free masters that lacked it.
 *
 * Fencing tokens: each master issues `max(last + 1, its clock in µs)`. The lock carries the
 * highest token its majority issued, and before the lock counts, that token is written as a
 * floor to the counter on every master (a majority must confirm). Any later holder's
 * majority shares at least one of those masters, which then issues a greater
 * token: tokens grow strictly as long as no master forgets its counter (a master restarted
 * empty falls back to its clock, which is enough while its clock is not behind by more than
 * the time since the token was issued).
 *
 * There is no queue across masters: waiters race for a released lock, woken by the release
 * message of any master, and contenders whose votes split try again after a random pause.
 */
export class RedlockLockStore implements LockStore {
  readonly capabilities = REDLOCK_CAPABILITIES;
  private readonly quorum: number;
  /** How many masters may fail, refuse or be slow while a majority still decides. */
  private readonly tolerated: number;
  /** Tokens with renewals whose masters have not all answered yet, and how many. */
  private readonly renewing = new Map<string, number>();
  /** Tokens released or handed off meanwhile: their renewals put them back nowhere (`repair`). */
  private readonly released = new Set<string>();
  private closed = false;

  /** @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name */
  constructor(
    private readonly masters: readonly RedlockMaster[],
    private readonly driftFactor: number,
    private readonly keyPrefix: string,
  ) {
    this.quorum = Math.floor(masters.length / 2) + 1;
    this.tolerated = masters.length - this.quorum;
  }

  /** Whether a majority of the masters' connections are up or still being set up. */
  get reachable(): boolean {
    return this.masters.filter((master) => master.store.reachable).length >= this.quorum;
  }

  /** One attempt, made again while it ends in a split vote (see {@link unsplit}). */
  acquire(key: string, token: string, ttl: number): Promise<AcquireAttempt> {
    return unsplit(
      () => this.attempt(key, token, ttl),
      () => this.closed,
    );
  }

  private async attempt(key: string, token: string, ttl: number): Promise<Vote> {
    const validUntil = monotonicNow() + ttl - driftOf(ttl, this.driftFactor);
    const votes = await askMasters(
      this.masters,
      // A late grant from a master that timed out is not given back by that master's store:
      // its release could overtake this caller's next attempt with the same token. The
      // withdrawal below follows the attempt on each connection instead.
      (store) => store.acquire(key, token, ttl, false, () => true),
      (answers, failed) =>
        count(answers, (attempt) => attempt.acquired) >= this.quorum ||
        count(answers, (attempt) => !attempt.acquired) + failed > this.tolerated,
    );
    const granted = votes.answers.filter(({ value }) => value.acquired);
    if (granted.length >= this.quorum && monotonicNow() < validUntil) {
      const fencingToken = Math.max(
        ...granted.map(({ value }) => (value.acquired ? value.fencingToken : 0)),
      );
      // On every master: any majority of them overlaps every later one, and a raised
      // counter is harmless where the lock was not granted.
      const raised = await askMasters(
        this.masters,
        (store) => store.raiseFence(key, fencingToken, token),
        (answers, failed) => answers.length >= this.quorum || failed > this.tolerated,
      );
      if (raised.answers.length >= this.quorum && monotonicNow() < validUntil) {
        return { attempt: { acquired: true, fencingToken }, split: false };
      }
      if (raised.failures.length > this.tolerated) {
        this.withdraw(key, token);
        throw this.quorumError(key, 'acquire (fencing floor)', raised);
      }
    }
    this.withdraw(key, token);
    if (votes.failures.length > this.tolerated) {
      throw this.quorumError(key, 'acquire', votes);
    }
    const answers = votes.answers.map(({ value }) => value);
    return {
      attempt: refusalAcross(answers, this.masters.length, this.quorum),
      split: granted.length > 0,
    };
  }

  /** Releases on every master; there is no queue, so no successor. */
  async release(key: string, token: string): Promise<ReleaseOutcome> {
    if (this.renewing.has(token)) this.released.add(token);
    const released = await this.decide(key, 'release', (store) =>
      store.release(key, token).then((outcome) => outcome.released),
    );
    return { released };
  }

  /** A token handed off is put back on no master, as a released one (see `repair`). */
  handedOff(_key: string, token: string): void {
    if (this.renewing.has(token)) this.released.add(token);
  }

  /**
   * Each entry is decided on its own: renewed by a majority, lost on too many masters, or
   * `undefined` when too few answered (the watchdog retries those). Rejects only when no
   * entry could be decided.
   */
  async renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    if (entries.length === 0) return [];
    for (const { token } of entries) this.renewing.set(token, (this.renewing.get(token) ?? 0) + 1);
    const tally = await askMasters(
      this.masters,
      (store) => store.renew(entries).then(decidedOn),
      (answers, failed) =>
        failed > this.tolerated ||
        entries.every(
          (_, i) => renewalOutcome(answers, i, this.quorum, this.tolerated) !== undefined,
        ),
    );
    const answers = tally.answers.map(({ value }) => value);
    const outcomes = entries.map((_, i) => renewalOutcome(answers, i, this.quorum, this.tolerated));
    // Every master's answer counts for the repair, also those that came after the decision.
    void tally.complete.then((all) => this.repair(entries, outcomes, all));
    if (outcomes.every((outcome) => outcome === undefined)) {
      throw this.quorumError(entries[0].key, 'renew', tally);
    }
    return outcomes;
  }

  transfer(...move: TransferParams) {
    return transferOnMasters(this.masters, this.keyPrefix, move);
  }

  async isLocked(key: string): Promise<boolean> {
    return this.decide(key, 'isLocked', (store) => store.isLocked(key));
  }

  /** The majority's view (see {@link majorityView}), once every master answered or failed. */
  async inspect(key: string): Promise<StoredLock> {
    return majorityView(await this.everyAnswer(key, 'inspect', (s) => s.inspect(key)), this.quorum);
  }

  /**
   * Evicts the holders on every master that answers; resolves how many a majority held (the
   * `quorum`-th greatest count).
   */
  async forceRelease(key: string): Promise<number> {
    const counts = await this.everyAnswer(key, 'forceRelease', (s) => s.forceRelease(key));
    return counts.sort((a, b) => b - a)[this.quorum - 1];
  }

  /** Up while a majority of masters answer. */
  async ping(): Promise<Record<string, unknown>> {
    const tally = await askMasters(
      this.masters,
      (store) => store.ping(),
      (answers) => answers.length >= this.quorum,
    );
    if (tally.answers.length < this.quorum) throw this.quorumError(this.keyPrefix, 'ping', tally);
    return { masters: `${tally.answers.length}/${this.masters.length} answered` };
  }

  /**
   * Listens on the key's channel of each master only, whatever instance the engine names:
   * RedLock keeps no line (see its capabilities), so no master ever announces a turn on an
   * instance's channel, and subscribing to one would cost a subscription per master for nothing.
   */
  async subscribe(key: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    const { tally, unsubscribe } = await subscribeOnMasters(
      this.masters,
      key,
      onEvent,
      this.quorum,
    );
    if (tally.answers.length < this.quorum) {
      unsubscribe();
      throw this.quorumError(key, 'subscribe', tally);
    }
    return unsubscribe;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.masters.map(({ store }) => store.close()));
  }

  /**
   * Puts a lock that a majority confirmed back on the masters that answered it was missing,
   * where it is free: a lock acquired on a bare majority (a contender held the key elsewhere)
   * or kept through a master's restart would otherwise be lost with the next minority of
   * masters. Only after a confirmation, so that a holder that lost its majority is told, not
   * silently given the lock again; and not once the lock was released while the renewal was
   * on its way (a release sent later follows the claim on each connection).
   */
  private repair(
    entries: readonly RenewalEntry[],
    outcomes: readonly (boolean | undefined)[],
    tally: Tally<boolean[]>,
  ): void {
    entries.forEach(({ key, token, ttl, fencingToken }, i) => {
      if (outcomes[i] && !this.released.has(token)) {
        for (const { master, value } of tally.answers) {
          if (!value[i])
            void master.store.claim(key, token, ttl, fencingToken).catch(() => undefined);
        }
      }
      const renewals = (this.renewing.get(token) ?? 1) - 1;
      if (renewals > 0) {
        this.renewing.set(token, renewals);
      } else {
        this.renewing.delete(token);
        this.released.delete(token);
      }
    });
  }

  /**
   * Takes back what an attempt that failed may have been granted, on every master, also those
   * that seemed to refuse (a reply may have been lost). Each master's connection runs the
   * withdrawal after the attempt, and before any later attempt with the same token.
   */
  private withdraw(key: string, token: string): void {
    for (const { store } of this.masters) void store.withdraw(key, token).catch(() => undefined);
  }

  /** A yes/no operation: yes from a majority, no from more than a minority, or an error. */
  private async decide(
    key: string,
    operation: string,
    call: (store: RedisLockStore) => Promise<boolean>,
  ): Promise<boolean> {
    const tally = await askMasters(
      this.masters,
      call,
      (answers, failed) =>
        count(answers, (yes) => yes) >= this.quorum ||
        count(answers, (yes) => !yes) > this.tolerated ||
        failed > this.tolerated,
    );
    const answers = tally.answers.map(({ value }) => value);
    if (count(answers, (yes) => yes) >= this.quorum) return true;
    if (count(answers, (yes) => !yes) > this.tolerated) return false;
    throw this.quorumError(key, operation, tally);
  }

  /** The answers of every master (waiting for the slow ones), if at least a quorum answered. */
  private async everyAnswer<T>(
    key: string,
    operation: string,
    call: (store: RedisLockStore) => Promise<T>,
  ): Promise<T[]> {
    const tally = await askMasters(this.masters, call, () => false);
    if (tally.answers.length < this.quorum) throw this.quorumError(key, operation, tally);
    return tally.answers.map(({ value }) => value);
  }

  private quorumError(key: string, operation: string, tally: Tally<unknown>): LockQuorumError {
    const { quorum, masters } = this;
    const name = lockNameOf(this.keyPrefix, key);
    return new LockQuorumError(name, operation, tally.failures, quorum, masters.length);
  }
}
