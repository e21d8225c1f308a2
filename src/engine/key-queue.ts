import { HANDOVER_LEASE, type LockEvent } from '../store/lock-store.interface.js';
import { LockConnectionError } from '../lock.errors.js';
import { monotonicNow } from './clock.js';
import { PlaceKeeper } from './place-keeper.js';
import { Recheck } from './recheck.js';
import type { Waiter } from './waiter.js';

/** Turns announced that a queue remembers for callers about to join it. */
const RECENT_TURNS = 8;

/**
 * The callers of this process waiting for one key, in arrival order. Only the head talks to the
 * store: it tries again when the store announces a release or its turn, or, should that message
 * be lost, after a fallback delay bounded by the holder's remaining TTL and by a jittered
 * exponential backoff. The others cost one request a second between them, which renews the
 * places in the store's queue that their first attempts took, until they reach the head. A
 * message never makes a caller a holder by itself: only the answer to a request does, which the
 * caller can date (see {@link Waiter.acquired}).
 */
export class KeyQueue {
  readonly waiters: Waiter[] = [];
  private readonly timeouts = new Map<Waiter, NodeJS.Timeout>();
  /**
   * Plain release messages heard so far, and the last few tokens whose turn was announced: what
   * a caller that queued meanwhile may have missed. A turn announced for somebody else is no
   * news to it (its first attempt found the lock taken, and it is in line).
   */
  releases = 0;
  private readonly turns: string[] = [];
  subscribed = false;
  closed = false;
  private attempting = false;
  /** A release was announced while an attempt was on its way. */
  private notified = false;
  private readonly recheck = new Recheck(() => this.next());
  /** Waiters that a release of this process served while their own attempt was on its way. */
  private readonly handedOver = new WeakSet<Waiter>();
  /**
   * Waiters whose last attempt could not reach the store, with its error: they wait on, and
   * fail with that error if their deadline comes before an attempt gets through.
   */
  private readonly unreachable = new Map<Waiter, LockConnectionError>();
  /** Renews the places of the callers behind the head while there are any. */
  private readonly places: PlaceKeeper;

  /**
   * @param pttl the holder's TTL as the first attempt saw it, or -1
   * @param queueing the store keeps a queue (fair mode): a caller that becomes the head here
   *   tries at once, which renews its place in that queue; without one it would only find the
   *   lock taken, and waits for the release instead
   * @param emptied called when the last waiter has left
   * @param keepPlaces renews the store's queue leases of the given callers (with a queueing
   *   store): those behind the head, which make no attempts, took places with their first
   *   attempts, and a place that is not renewed lapses as a dead waiter's does
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
   * Adds a caller; `heard` is how many release messages had been heard when its first attempt
   * was sent, if the key was subscribed to then. `late` puts it at the head: a caller whose
   * first attempt was granted too late to use, whose token may still hold the lock. That is
   * its last word from the store until another attempt is answered.
   */
  add(waiter: Waiter, heard?: number, late?: LockConnectionError): void {
    if (late) {
      this.waiters.unshift(waiter);
      this.unreachable.set(waiter, late);
    } else {
      this.waiters.push(waiter);
    }
    if (waiter.deadline < Infinity) this.armDeadline(waiter);
    this.keepPlacesBehindHead();
    if (!this.subscribed || this.attempting || this.waiters[0] !== waiter) return;
    // Subscribed since before the first attempt, with no release and no turn of its own
    // announced since: any release after that attempt will be heard, so there is nothing to
    // try until then.
    if (heard === this.releases && !this.turns.includes(waiter.token)) this.fallBack();
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

  /**
   * A release by this process gave the lock to `token`, valid from `validFrom`; `false` when
   * that caller no longer waits.
   */
  handOver(token: string, fencingToken: number, validFrom: number): boolean {
    const index = this.waiters.findIndex((candidate) => candidate.token === token);
    if (index < 0) return false;
    const waiter = this.waiters[index];
    const late = waiter.late(validFrom);
    if (late) {
      this.unreachable.set(waiter, late);
      // The release was answered too late to date the lock from it: the caller asks at once
      // instead, which renews the lock if it is still its own, and keeps its place otherwise.
      this.waiters.unshift(...this.waiters.splice(index, 1));
      if (this.attempting) this.notified = true;
      else this.next();
      return true;
    }
    this.handedOver.add(waiter);
    this.remove(waiter);
    waiter.acquired(fencingToken, validFrom);
    if (!this.attempting) this.afterAttempt(true);
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
    if (this.attempting) return true;
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
      clearTimeout(this.timeouts.get(waiter));
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
    if (turn === undefined) this.releases++;
    else if (this.turns.push(turn) > RECENT_TURNS) this.turns.shift();
    const named = turn === undefined ? -1 : this.waiters.findIndex((w) => w.token === turn);
    if (named > 0) {
      // The turn of a caller of ours behind the head (the head's own place lapsed, or its
      // first attempt reached the store later). It goes first here too, or nobody would take
      // the lock reserved for it.
      this.waiters.unshift(...this.waiters.splice(named, 1));
    }
    const head = this.waiters[0];
    if (!head) return;
    if (turn !== undefined && turn !== head.token) {
      // Reserved for a waiter of another process: our head keeps its place. Should that waiter
      // not take it (it died, or hears too late), the reservation ends within the handover
      // lease, and nobody announces that: look again then.
      this.pttl = HANDOVER_LEASE;
      if (!this.attempting) this.fallBack(true);
      return;
    }
    // A release, or our head's turn: its next attempt takes the lock.
    if (turn === undefined) {
      this.recheck.reset();
      this.pttl = -1;
    }
    if (this.attempting) this.notified = true;
    else this.next();
  }

  /** Lets the head of the queue try once. */
  private next(): void {
    const head = this.waiters[0];
    if (!head) {
      this.emptied(this);
      return;
    }
    if (!this.subscribed || this.attempting || this.closed) return;
    this.stop();
    this.attempting = true;
    this.notified = false;
    const sentAt = monotonicNow();
    head.attempt().then(
      (result) => {
        this.attempting = false;
        // The store answered: no caller's last word from it is that it could not be reached.
        this.unreachable.clear();
        const late = result.acquired ? head.late(sentAt) : undefined;
        if (late && this.waiters.includes(head)) {
          // The store answered after the TTL (it paused, or failed over): the lock may have
          // expired and gone to another meanwhile. The caller asks again at once, in its place,
          // which renews the lock if it is still its own.
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
        }
        this.afterAttempt(this.waiters[0] !== head);
      },
      (error: unknown) => {
        this.attempting = false;
        if (error instanceof LockConnectionError && this.waiters.includes(head)) {
          // The store did not answer (a failover, a restart, a slow network): a caller that
          // waits in line keeps its place there and tries again, more slowly each time, until
          // its deadline. Its attempts carry its token, so one that was applied unanswered is
          // only repeated: the store counts the lock (or permit, or place) as the caller's.
          this.unreachable.set(head, error);
          this.pttl = -1;
          this.afterAttempt(this.waiters[0] !== head);
          return;
        }
        if (this.remove(head)) head.failed(error);
        this.afterAttempt(this.waiters[0] !== head);
      },
    );
  }

  /**
   * After an attempt: with a queueing store, a new head tries at once, to take its place in
   * line; otherwise the head tries again when a release is announced, or after the fallback
   * delay.
   */
  private afterAttempt(headChanged: boolean): void {
    if (this.waiters.length === 0) this.emptied(this);
    else if ((headChanged && this.queueing) || this.notified) this.next();
    else this.fallBack();
  }

  /** Arms the fallback re-check; with `sooner`, only if it comes before the one armed. */
  private fallBack(sooner = false): void {
    this.recheck.arm(this.pttl, sooner);
  }

  private keepPlacesBehindHead(): void {
    if (!this.queueing || this.waiters.length < 2) return;
    this.places.start(() => this.waiters.slice(1).map((waiter) => waiter.token));
  }

  private armDeadline(waiter: Waiter): void {
    const timer = setTimeout(
      () => this.giveUp(waiter),
      Math.ceil(Math.max(0, waiter.deadline - monotonicNow())),
    );
    this.timeouts.set(waiter, timer);
  }

  private giveUp(waiter: Waiter): void {
    // Timers count on the event loop's millisecond clock and can fire a little early by the
    // monotonic one; a caller must have waited its full waitTimeout.
    if (monotonicNow() < waiter.deadline && this.waiters.includes(waiter)) {
      this.armDeadline(waiter);
      return;
    }
    const error = this.unreachable.get(waiter);
    this.drop(waiter, () => (error ? waiter.failed(error) : waiter.timedOut(this.pttl)));
  }

  /** Takes a waiter out of the queue; `false` if it was no longer there. */
  private remove(waiter: Waiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    clearTimeout(this.timeouts.get(waiter));
    this.timeouts.delete(waiter);
    this.unreachable.delete(waiter);
    if (this.waiters.length < 2) this.places.stop();
    return true;
  }
}
