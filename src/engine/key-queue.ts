import { HANDOVER_LEASE, type LockEvent } from '../store/lock-store.interface.js';
import { LockConnectionError } from '../lock.errors.js';
import { monotonicNow } from './clock.js';
import { Deadlines } from './deadlines.js';
import { OwedTurns } from './owed-turns.js';
import { PlaceKeeper } from './place-keeper.js';
import { Recheck } from './recheck.js';
import type { Waiter } from './waiter.js';

/**
 * The callers of this process waiting for one key, in arrival order. Only the head talks to the
 * store: it tries again when the store announces a release or its turn, or, should that message
 * be lost, after a fallback delay bounded by the holder's remaining TTL and a jittered backoff.
 * The others cost one request a second between them, which renews their places in the store's
 * queue. A caller holds only from a moment it can date by a request whose answer it has: its
 * attempt's, a release's of this process, or its last refused attempt's when a grant notice
 * proves that attempt ran before the grant (see {@link Waiter.noticeGrant}).
 */
export class KeyQueue {
  readonly waiters: Waiter[] = [];
  private readonly deadlines = new Deadlines((waiter) => {
    const error = this.unreachable.get(waiter);
    this.drop(waiter, () => (error ? waiter.failed(error) : waiter.timedOut(this.pttl)));
  });
  /**
   * Plain releases heard, and the turns announced: what a caller queued meanwhile may have
   * missed (a turn of somebody else is no news to it: it is in line).
   */
  releases = 0;
  private readonly turns = new OwedTurns();
  subscribed = false;
  closed = false;
  /** Whose attempt is on its way: the head when it was sent, which a turn may have moved. */
  private attempter?: Waiter;
  /** Announced while an attempt was on its way: a release; a grant to the attempter, to date. */
  private notified = false;
  private noticed?: { waiter: Waiter; fencingToken: number };
  private readonly recheck = new Recheck(() => this.next());
  /** Waiters served by a release here, or a notice, while their own attempt was on its way. */
  private readonly handedOver = new WeakSet<Waiter>();
  /** Waiters whose last attempt got no answer, with its error: theirs if their deadline comes. */
  private readonly unreachable = new Map<Waiter, LockConnectionError>();
  /** Renews the places of the callers behind the head while there are any. */
  private readonly places: PlaceKeeper;

  /**
   * @param pttl the holder's TTL as the first attempt saw it, or -1
   * @param queueing the store keeps a queue (fair mode): a new head here tries at once, which
   *   renews its place there; without one it waits for the release instead
   * @param emptied called when the last waiter has left
   * @param keepPlaces renews the store's queue leases of the given callers (with a queueing
   *   store): those behind the head make no attempts, and their places would lapse
   */
  constructor(
    readonly key: string,
    private pttl: number,
    private readonly queueing: boolean,
    private readonly emptied: (queue: KeyQueue) => void,
    keepPlaces?: (tokens: string[]) => void,
  ) {
    this.places = new PlaceKeeper(keepPlaces);
  }

  /**
   * Adds a caller; `heard`: the release messages heard when its first attempt was sent, if
   * subscribed then. `late` puts it at the head: its first attempt was granted too late to use,
   * and its token may still hold the lock; that is its last word from the store for now.
   */
  add(waiter: Waiter, heard?: number, late?: LockConnectionError): void {
    // Its turn came meanwhile, or its token may hold the lock (`late`): it goes first, and asks.
    const owed = this.turns.joined(waiter, late !== undefined);
    if (owed) this.waiters.unshift(waiter);
    else this.waiters.push(waiter);
    if (late) this.unreachable.set(waiter, late);
    this.deadlines.arm(waiter);
    this.keepPlacesBehindHead();
    if (!this.subscribed || this.attempter || this.waiters[0] !== waiter) return;
    // Subscribed since before its first attempt, with no release and no turn of its own heard
    // since: any later release will be heard, so there is nothing to try until then.
    if (heard === this.releases && !owed) this.fallBack();
    else this.next();
  }

  /** The queue gets waiters again after it lingered empty. */
  reopen(pttl: number): void {
    this.recheck.reset();
    this.pttl = pttl;
  }

  /** Notifications flow: a release between the first attempt and now went unheard, so try. */
  start(): void {
    this.subscribed = true;
    if (this.waiters.length > 0) this.next();
    else this.emptied(this);
  }

  /** A release here gave `token` the lock, valid from `validFrom`; `false`: it waits no more. */
  handOver(token: string, fencingToken: number, validFrom: number): boolean {
    const index = this.waiters.findIndex((candidate) => candidate.token === token);
    if (index < 0) return false;
    const waiter = this.waiters[index];
    const late = waiter.late(validFrom);
    if (late) {
      this.unreachable.set(waiter, late);
      // Answered too late to date the lock from: it asks first, which renews it if still its own.
      this.turns.announced(token, waiter);
      this.waiters.unshift(...this.waiters.splice(index, 1));
      if (this.attempter) this.notified = true;
      else this.next();
      return true;
    }
    this.handedOver.add(waiter);
    this.remove(waiter);
    waiter.acquired(fencingToken, validFrom);
    if (!this.attempter) this.afterAttempt(true);
    return true;
  }

  /**
   * Takes a caller that stops waiting out of the line, tells it (`left`), and lets the next
   * one go on; `false` if it was no longer there.
   */
  drop(waiter: Waiter, left: () => void): boolean {
    const wasHead = this.waiters[0] === waiter;
    if (!this.remove(waiter)) return false;
    left();
    // While the old head's attempt is on its way, its result decides what comes next.
    if (this.attempter) return true;
    if (this.waiters.length === 0) this.emptied(this);
    else if (wasHead) this.afterAttempt(true);
    return true;
  }

  /** The store could not be reached for the key: each waiter's last word from it, for now. */
  unreachableFor(error: LockConnectionError): void {
    for (const waiter of this.waiters) this.unreachable.set(waiter, error);
  }

  /** Fails every waiting caller with the error `errorOf` it. */
  failAll(errorOf: (waiter: Waiter) => unknown): void {
    this.places.stop();
    for (const waiter of this.waiters.splice(0)) {
      this.deadlines.clear(waiter);
      waiter.failed(errorOf(waiter));
    }
  }

  /** Stops the fallback re-check; for good, with the keeping of places, once it is closed. */
  stop(): void {
    this.recheck.stop();
    if (this.closed) this.places.stop();
  }

  /** What the store told of the key: a release, or somebody's turn. */
  heard(event: LockEvent): void {
    const turn = event.type === 'turn' ? event.token : undefined;
    const named = turn === undefined ? -1 : this.waiters.findIndex((w) => w.token === turn);
    if (turn === undefined) this.releases++;
    else this.turns.announced(turn, named < 0 ? undefined : this.waiters[named]);
    const fencingToken = event.type === 'turn' ? event.fencingToken : undefined;
    if (named >= 0 && fencingToken !== undefined && this.takeUp(named, fencingToken)) return;
    // The turn of a caller of ours behind the head (the head's own place lapsed, or its first
    // attempt reached the store later) goes first here too, or nobody would take the lock.
    if (named > 0) this.waiters.unshift(...this.waiters.splice(named, 1));
    const head = this.waiters[0];
    if (!head) return;
    if (turn !== undefined && turn !== head.token) {
      // Granted to a waiter of another process: our head keeps its place. Should that waiter
      // not take it up (it died, or hears too late), the grant ends within the handover lease,
      // and nobody announces that: look again then.
      this.pttl = HANDOVER_LEASE;
      if (!this.attempter) this.fallBack(true);
      return;
    }
    // A release, or our head's turn: its next attempt takes the lock.
    if (turn === undefined) {
      this.recheck.reset();
      this.pttl = -1;
    }
    if (this.attempter) this.notified = true;
    else this.next();
  }

  /**
   * The store granted the lock to the caller at `index` and said so (see `LockEvent`): `true`
   * when it holds from the notice. An attempt of the caller's on its way decides instead: a
   * refusal may date the grant, and a grant takes its place.
   */
  private takeUp(index: number, fencingToken: number): boolean {
    const waiter = this.waiters[index];
    if (waiter === this.attempter) this.noticed = { waiter, fencingToken };
    else if (this.holdFromNotice(waiter, fencingToken)) {
      // A caller behind the head leaves the head's fallback re-check as it is.
      if (!this.attempter && index === 0) this.afterAttempt(true);
      return true;
    }
    return false;
  }

  /** Makes the caller a holder of the lock granted with `fencingToken`, if it can date it. */
  private holdFromNotice(waiter: Waiter, fencingToken: number): boolean {
    const grant = waiter.noticeGrant(fencingToken);
    if (grant === undefined || !this.remove(waiter)) return false;
    // Served outside its attempt: should one of its attempts still be granted, that is its lock.
    this.handedOver.add(waiter);
    waiter.acquired(fencingToken, grant.validFrom, grant.validFor);
    return true;
  }

  /** Lets the head of the queue try once. */
  private next(): void {
    const head = this.waiters[0];
    if (!head) {
      this.emptied(this);
      return;
    }
    if (!this.subscribed || this.attempter || this.closed) return;
    this.stop();
    this.attempter = head;
    this.notified = false;
    this.turns.served(head);
    const sentAt = monotonicNow();
    head.attempt().then(
      (result) => {
        this.attempter = undefined;
        const { noticed } = this;
        this.noticed = undefined;
        // The store answered: no caller's last word from it is that it could not be reached.
        this.unreachable.clear();
        const late = result.acquired ? head.late(sentAt) : undefined;
        if (late && this.waiters.includes(head)) {
          // Answered after the TTL (the store paused, or failed over): the lock may be another's
          // by now. The caller asks again at once, in its place, which renews it if still its own.
          this.unreachable.set(head, late);
          this.pttl = -1;
          this.notified = true;
        } else if (result.acquired) {
          if (this.remove(head)) head.acquired(result.fencingToken, sentAt);
          else if (!this.handedOver.has(head)) head.abandoned();
          this.pttl = -1;
          // A release announced meanwhile came before this grant (RedLock announces each
          // release once per master): the next caller has to wait for this holder's release.
          this.notified = false;
        } else {
          this.pttl = result.pttl;
          if (noticed?.waiter === head && this.holdFromNotice(head, noticed.fencingToken)) {
            this.pttl = -1;
            this.notified = false;
          }
        }
        this.afterAttempt(this.waiters[0] !== head);
      },
      (error: unknown) => {
        this.attempter = undefined;
        this.noticed = undefined;
        if (error instanceof LockConnectionError && this.waiters.includes(head)) {
          // The store did not answer (a failover, a restart, a slow network): the caller keeps
          // its place and tries again, more slowly each time, until its deadline. Its attempts
          // carry its token, so one applied unanswered is only repeated.
          this.unreachable.set(head, error);
          this.pttl = -1;
        } else if (this.remove(head)) head.failed(error);
        this.afterAttempt(this.waiters[0] !== head);
      },
    );
  }

  /**
   * After an attempt: a caller owed an attempt for its turn goes first and tries; with a
   * queueing store, a new head tries at once, to take its place in line; otherwise the head
   * tries again when a release is announced, or after the fallback delay.
   */
  private afterAttempt(headChanged: boolean): void {
    if (this.waiters.length === 0) this.emptied(this);
    else if (this.turns.putFirst(this.waiters) || (headChanged && this.queueing) || this.notified) {
      this.next();
    } else this.fallBack();
  }

  /** Arms the fallback re-check; with `sooner`, only if it comes before the one armed. */
  private fallBack(sooner = false): void {
    this.recheck.arm(this.pttl, sooner);
  }

  private keepPlacesBehindHead(): void {
    if (!this.queueing || this.waiters.length < 2) return;
    this.places.start(() => this.waiters.slice(1).map((waiter) => waiter.token));
  }

  /** Takes a waiter out of the queue; `false` if it was no longer there. */
  private remove(waiter: Waiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    this.deadlines.clear(waiter);
    this.unreachable.delete(waiter);
    if (this.waiters.length < 2) this.places.stop();
    return true;
  }
}
