import { holdForOfToken } from '../../src/store/throttle-window.js';

/**
 * The throttle's promise, as the store sees it: once a caller was granted a key with `holdFor`,
 * nobody else is granted it until `holdFor` after that caller's request was sent. The store
 * applies the grant up to a latency after the request left, and the holder measures the window
 * on its own clock, which may run slow by the drift factor: so the bound is the grant, less
 * the worst latency, plus `holdFor` less the drift. Checked in quiet runs only, where no fault
 * takes the lock from its holder before it leaves its window in the store.
 */
export class ThrottleWindows {
  /** Per key, the holder of the last throttled grant and when its window ends at the soonest. */
  private readonly windows = new Map<string, { token: string; until: number }>();
  /**
   * When the store lets each token's lock go by its TTL, as the grants and renewals it applied
   * set it: a holder that lost its lock that way (an extend to a TTL shorter than the round
   * trips, say) lost its window with it.
   */
  private readonly expiries = new Map<string, number>();

  constructor(
    private readonly maxLatency: number,
    private readonly driftFactor: number,
  ) {}

  /** Tokens whose callers held their lock: they keep their window, whatever they release. */
  private readonly used = new Set<string>();

  /** A caller holds the lock of `token`: it got it, and its window counts. */
  held(token: string): void {
    this.used.add(token);
  }

  /**
   * `token` released `key` (or left its line): a lock given back unused (its caller gave up
   * as it was granted, or took only some of its keys) keeps no window. A holder that used it
   * leaves it in the store until its window ends, or releases it once it has.
   */
  released(key: string, token: string): void {
    if (this.windows.get(key)?.token === token && !this.used.has(token)) this.windows.delete(key);
  }

  /** The store renewed the lock of `token` with `ttl`, at virtual `now`. */
  renewed(token: string, ttl: number, now: number): void {
    this.expiries.set(token, now + ttl);
  }

  /**
   * The store granted `key` to `token` for `ttl` at virtual `now`: what is wrong with that, if
   * anything.
   */
  granted(key: string, token: string, now: number, ttl = Infinity): string | undefined {
    const open = this.windows.get(key);
    const expired = open !== undefined && (this.expiries.get(open.token) ?? Infinity) <= now;
    this.expiries.set(token, now + ttl);
    const early =
      open && open.token !== token && now < open.until && !expired
        ? `${key} granted at ${now}, inside the window of the throttle before it (until ${open.until})`
        : undefined;
    const holdFor = holdForOfToken(token);
    if (holdFor === undefined) this.windows.delete(key);
    else {
      const until = now - this.maxLatency + Math.floor(holdFor * (1 - this.driftFactor)) - 1;
      this.windows.set(key, {
        token,
        until: Math.max(until, open?.token === token ? open.until : -Infinity),
      });
    }
    return early;
  }
}
