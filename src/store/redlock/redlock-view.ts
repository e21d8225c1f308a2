import type { StoredHold, StoredLock } from '../lock-store.interface.js';

/**
 * What a majority of RedLock's masters say of a key, from each master's own view: a holder is
 * one whose token at least `quorum` masters hold. Its `ttlMs` is how long a majority still holds
 * it (the `quorum`-th longest of their TTLs), its fencing token the one most of those masters
 * recorded (the lock's, which the acquisition wrote to every master with its floor; a master
 * that missed that write keeps its own), the highest on a tie. `waiting` counts as the TTLs do,
 * though with no queue across masters it is 0.
 */
export function majorityView(views: readonly StoredLock[], quorum: number): StoredLock {
  const byToken = new Map<string, StoredHold[]>();
  for (const view of views) {
    for (const hold of view.holders) {
      const holds = byToken.get(hold.token);
      if (holds) holds.push(hold);
      else byToken.set(hold.token, [hold]);
    }
  }
  const holders: StoredHold[] = [];
  for (const [token, holds] of byToken) {
    if (holds.length < quorum) continue;
    const ttls = holds.map((hold) => hold.ttlMs).sort((a, b) => b - a);
    const hold: StoredHold = { token, ttlMs: ttls[quorum - 1] };
    const fence = mostRecorded(holds.flatMap((each) => each.fencingToken ?? []));
    if (fence !== undefined) hold.fencingToken = fence;
    holders.push(hold);
  }
  const waiting = views.map((view) => view.waiting).sort((a, b) => b - a);
  return { holders, waiting: waiting[quorum - 1] ?? 0 };
}

/** The value most often in `values`, the greatest of those on a tie. */
function mostRecorded(values: readonly number[]): number | undefined {
  const counts = new Map<number, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  let best: number | undefined;
  for (const [value, n] of counts) {
    const bestCount = best === undefined ? 0 : counts.get(best)!;
    if (n > bestCount || (n === bestCount && value > best!)) best = value;
  }
  return best;
}
