/**
 * The fencing tokens that valid holders of each mutex saw, each with when the store applied its
 * grant, for the checker's fencing order: a loss of the store's takes back the grants it lost,
 * and with them what their holders saw (a failover that lost an operator's `forceRelease` gives
 * the lock back to its holder, whose token is below the one granted meanwhile).
 */
export class HeldFences {
  private readonly seen = new Map<string, { fence: number; grantedAt: number }[]>();
  /** When the store last granted each token (by an attempt, a hand-over or a turn). */
  private readonly grants = new Map<string, number>();

  /** The store granted `token` at `now`. */
  granted(token: string, now: number): void {
    this.grants.set(token, now);
  }

  /** The highest token a valid holder of `key` saw, of the grants the store still has. */
  last(key: string): number {
    return Math.max(-Infinity, ...(this.seen.get(key) ?? []).map(({ fence }) => fence));
  }

  /** A valid holder of `key` saw `fence`, the grant of `token` (or one made `now`). */
  saw(key: string, token: string, fence: number, now: number): void {
    const grantedAt = this.grants.get(token) ?? now;
    this.seen.set(key, [...(this.seen.get(key) ?? []), { fence, grantedAt }]);
  }

  /** The store lost every grant it had applied since `since`. */
  lostSince(since: number): void {
    for (const [key, seen] of this.seen) {
      this.seen.set(
        key,
        seen.filter(({ grantedAt }) => grantedAt < since),
      );
    }
  }
}
