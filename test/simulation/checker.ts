import type { Lock } from '../../src/lock.js';
import { HANDOVER_LEASE, type AcquireAttempt } from '../../src/store/lock-store.interface.js';
import type { ThrottleWindows } from './throttle-windows.js';
import { HeldFences } from './held-fences.js';
import type { TurnsTaken } from './turns-taken.js';
import type { Call, Holding, KeyKind, Violation } from './run-types.js';
import type { World } from './world.js';

export type { Call, Holding, KeyKind, Violation } from './run-types.js';

/** The longest TTL a caller of a run asks for. */
export const LONGEST_TTL = 1_000;

/** The engine's own idea of how long a lock is certainly its own (see `HeldLock.validUntil`). */
const validUntil = (lock: Lock) => (lock as unknown as { validUntil: number }).validUntil;
const stillHeld = (lock: Lock) => (lock as unknown as { held: boolean }).held;

/**
 * The invariants, checked as the run goes: holders whose validity overlaps, fencing tokens out
 * of order, calls that outlive their deadline; and, once everything has shut down, what is
 * left behind.
 */
export class Checker {
  violation?: Violation;
  readonly calls: Call[] = [];
  private readonly holdings = new Map<string, Set<Holding>>();
  /** Per key, the last fencing token the store granted, and those valid holders saw. */
  private readonly storeFences = new Map<string, number>();
  private readonly heldFences = new HeldFences();
  /**
   * Set for a quiet run in fair mode (see `lineOrder`): how the trace names a token, and the
   * prefix of the store's keys.
   */
  lineOrder?: { name: (token: string) => string; prefix: string; minTtl: number };
  /** Set for a quiet run in fair mode: the turns announced, until their waiters take them up. */
  turns?: TurnsTaken;
  /** Set for a quiet run: the throttles' windows, as the store grants keys. */
  throttles?: ThrottleWindows;
  /** Per mutex, the store's line: each waiting token, and when the store queued it. */
  private readonly lines = new Map<string, Map<string, number>>();
  /** When the store first applied an attempt of each token. */
  private readonly firstSeen = new Map<string, number>();
  /**
   * When the store last applied a grant, renewal or hand-off to each token, and until when at
   * the latest that write can make its holder valid: its TTL from then (a validity counts from
   * the request's sending, before the store applied it), with a tenth more for the clocks.
   */
  private readonly wrote = new Map<string, { at: number; until: number }>();
  /**
   * Tokens whose last grant or renewal the store lost (it restarted empty, or failed over to a
   * replica that had not received it), or whose lock an operator force-released, and that it
   * has granted or renewed nothing since, each with the end of what that write could justify:
   * until then, while the store does not hold the token, its holder is not counted against
   * others (docs/guarantees.md: what a lock on Redis does not guarantee; `forceRelease`).
   */
  private readonly lost = new Map<string, number>();
  /** When the store last refused to renew each token's lock. */
  private readonly refusals = new Map<string, number>();
  /**
   * Tokens whose holders were told, since the store's last write for them, that their lock is
   * gone: they know it, and are no longer excused.
   */
  private readonly told = new Set<string>();
  /** Whether the store holds `token` on full key `key` now, where the run can tell. */
  storeHolds?: (key: string, token: string) => boolean;

  constructor(
    private readonly world: World,
    private readonly kinds: ReadonlyMap<string, KeyKind>,
  ) {}

  /** How long past its `waitTimeout` a call may take to settle. */
  slack = Infinity;

  fail(invariant: string, detail: string): void {
    if (this.violation) return;
    this.violation = { invariant, detail, at: this.world.now() };
    this.world.log(`VIOLATION ${invariant}: ${detail}`);
  }

  /** The store applied an attempt of `token`'s on `key`, which got `reply`. */
  storeAttempted(
    key: string,
    token: string,
    reply: AcquireAttempt,
    asked: { ttl: number; queue: boolean },
  ): void {
    if (!this.firstSeen.has(token)) this.firstSeen.set(token, this.world.now());
    this.turns?.heardFrom(token);
    if (reply.acquired) this.storeGranted(key, token, reply.fencingToken, asked.ttl);
    else if (asked.queue && asked.ttl >= (this.lineOrder?.minTtl ?? Infinity)) {
      this.lineOf(key)?.set(token, this.lineOf(key)?.get(token) ?? this.world.now());
    }
  }

  /** The store granted `key` to `token` with `fencingToken`, as it applied the request. */
  storeGranted(key: string, token: string, fencingToken: number, ttl?: number): void {
    this.storeWrote(token, ttl);
    this.heldFences.granted(token, this.world.now());
    const last = this.storeFences.get(key) ?? -Infinity;
    if (fencingToken <= last) {
      this.fail('fencing order', `the store granted ${key} ${fencingToken} after ${last}`);
    }
    this.storeFences.set(key, fencingToken);
    const early = this.throttles?.granted(key, token, this.world.now(), ttl);
    if (early) this.fail('throttle window', early);
    const line = this.lineOf(key);
    if (!line || !this.lineOrder) return;
    line.delete(token);
    // First come, first served (docs/guarantees.md): a caller in the store's line before
    // another's first attempt reached it is served first, when nothing went wrong meanwhile.
    const since = this.firstSeen.get(token) ?? this.world.now();
    for (const [waiting, joined] of line) {
      if (joined >= since) continue;
      const { name } = this.lineOrder;
      this.fail(
        'line order',
        `${name(token)}, which first asked for ${key} at ${since}, got it before ` +
          `${name(waiting)}, in line since ${joined}`,
      );
    }
  }

  /**
   * The store granted or renewed the lock of `token` for `ttl` (the longest a caller asks for,
   * where the store's side does not know it), or handed a lock off to it.
   */
  storeWrote(token: string, ttl = LONGEST_TTL): void {
    const at = this.world.now();
    this.wrote.set(token, { at, until: at + ttl * 1.1 + 1 });
    this.lost.delete(token);
    this.told.delete(token);
  }

  /** The store refused to renew the lock of `token`. */
  storeRefused(token: string): void {
    this.refusals.set(token, this.world.now());
  }

  /** The answer of a refused renewal reached the holder of `token`. */
  heardRefusal(token: string): void {
    const refused = this.refusals.get(token) ?? -Infinity;
    if (refused >= (this.wrote.get(token)?.at ?? -Infinity)) this.told.add(token);
  }

  /**
   * A release (or a forced one) reserved `key` for the waiter `token`, first in line, with
   * `fencingToken`, for at most the handover lease, and announces its turn. A grant told
   * already (an attempt's, a successor's) is not told again.
   */
  storeTurned(key: string, token: string, fencingToken: number): void {
    if (this.storeFences.get(key) === fencingToken) return;
    this.storeGranted(key, token, fencingToken, HANDOVER_LEASE);
    if (this.lineOf(key)) this.turns?.announced(key, token);
  }

  /**
   * An operator's `forceRelease` took the key from `tokens`: as after a loss of the store's,
   * their holders are not counted (they learn it at their next renewal, docs/guarantees.md)
   * until the store grants or renews their tokens again.
   */
  storeEvicted(tokens: readonly string[]): void {
    const now = this.world.now();
    for (const token of tokens) {
      this.lost.set(token, this.wrote.get(token)?.until ?? now + LONGEST_TTL * 1.1 + 1);
    }
  }

  /** The store lost every write it had applied since `since`. */
  storeLost(since: number): void {
    for (const [token, { at, until }] of this.wrote) if (at >= since) this.lost.set(token, until);
    this.heldFences.lostSince(since);
  }

  /** Whether `lock` is left out of exclusion and fencing order: see {@link lost}. */
  private excused(lock: Lock): boolean {
    const until = this.lost.get(lock.token);
    if (until === undefined || this.world.now() >= until || this.told.has(lock.token)) return false;
    return !(this.storeHolds?.(lock.key, lock.token) ?? false);
  }

  /** `token` released `key` or left its line, or renewed a lock it holds. */
  storeLeftLine(key: string, token: string): void {
    this.lines.get(key)?.delete(token);
    this.turns?.heardFrom(token);
  }

  /** The store's line of `key`, when the run checks line order and `key` is a mutex. */
  private lineOf(key: string): Map<string, number> | undefined {
    if (!this.lineOrder) return undefined;
    const kind = this.kinds.get(key.slice(this.lineOrder.prefix.length));
    // A throttle's line waits out windows, and a caller may be early rather than in conflict.
    if (kind?.type !== 'mutex' || kind.throttle || !key.startsWith(this.lineOrder.prefix)) {
      return undefined;
    }
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = new Map<string, number>()));
    return line;
  }

  /** A caller's call returned a lock: it holds from now on, while the lock is valid. */
  held(holding: Holding): void {
    const { key, lock, caller } = holding;
    const valid = this.world.localNow(holding.place) < validUntil(lock);
    // A lock whose validity ran out before its answer came may be another's: the engine gives
    // it back rather than let work start that nothing protects. (Virtual time stands still
    // between the call's return and this look, so nothing ran out in between; a lock the
    // watchdog already marked lost counts too: its caller was handed it all the same.)
    if (!valid) {
      this.fail(
        'valid when granted',
        `${caller} got ${key} (${lock.fencingToken}) already invalid`,
      );
    }
    if (this.kinds.get(key)?.type === 'mutex' && valid && !this.excused(lock)) {
      const last = this.heldFences.last(key);
      if (lock.fencingToken < last || (lock.fencingToken === last && !holding.adopted)) {
        this.fail(
          'fencing order',
          `${caller} holds ${key} with ${lock.fencingToken} after ${last}`,
        );
      }
      this.heldFences.saw(key, lock.token, lock.fencingToken, this.world.now());
    }
    this.throttles?.held(lock.token);
    let holders = this.holdings.get(key);
    if (!holders) this.holdings.set(key, (holders = new Set()));
    holders.add(holding);
    this.check();
  }

  /** The caller's work under `holding` ended (it releases, or its `using` returns). */
  ended(holding: Holding): void {
    this.holdings.get(holding.key)?.delete(holding);
  }

  /** Exclusion within validity, at this moment; and no call waits past its deadline. */
  check(): void {
    const now = this.world.now();
    for (const [key, holders] of this.holdings) {
      const valid = [...holders].filter(
        ({ lock, place }) =>
          !place.crashed &&
          stillHeld(lock) &&
          this.world.localNow(place) < validUntil(lock) &&
          !this.excused(lock),
      );
      if (valid.length > 1) this.exclusion(key, valid);
    }
    for (const call of this.calls) {
      if (call.settledAt !== undefined || call.place.crashed) continue;
      if (now > call.startedAt + call.waitTimeout + this.slack) {
        this.fail(
          'deadline',
          `${call.caller} still waits for ${call.key}, called at ${call.startedAt} with ` +
            `waitTimeout ${call.waitTimeout}`,
        );
      }
    }
  }

  private exclusion(key: string, valid: Holding[]): void {
    const kind = this.kinds.get(key) ?? { type: 'mutex' };
    const who = valid.map((holding) => `${holding.caller}(${holding.lock.fencingToken})`).join(' ');
    if (kind.type === 'mutex') this.fail('mutual exclusion', `${key} held by ${who}`);
    if (kind.type === 'semaphore') {
      const permits = valid.reduce((sum, holding) => sum + holding.permits, 0);
      if (permits > kind.limit) {
        this.fail('semaphore limit', `${key}: ${permits} permits of ${kind.limit}, ${who}`);
      }
    }
    if (kind.type === 'rw' && valid.some((holding) => holding.mode === 'write')) {
      this.fail('writer exclusion', `${key} held by ${who}`);
    }
  }
}
