/**
 * How a store tells a throttle's holder from any other, and how much of its window is left.
 *
 * The token of a caller that acquires with `holdFor` carries `h<holdFor>.` right after its
 * kind's tag (`h5000.<hex>@owner` for a mutex, `s3.h5000.<hex>@owner` for a permit), so that
 * any store that keeps the holder's token knows it is a throttle, and for how long, without
 * keeping anything else. Tokens made before the tag existed carry none: their holders are
 * plain holders.
 *
 * A store dates the grant by the holder's fencing token, which it issued as `max(last + 1,
 * its clock in µs)`: a token within {@link FENCE_AHEAD_US} of the store's clock is that clock
 * at the grant, or a little after it, so the window it gives never outlasts the real one by
 * more than that margin. A token further ahead (a counter that ran ahead of a clock that went
 * back) dates nothing, and the refusal is then a plain conflict.
 */

/** How far ahead of the store's clock, in µs, a fencing token may be and still date a grant. */
export const FENCE_AHEAD_US = 1_000_000;

const HOLD_FOR = /^(?:(?:s\d+(?:x\d+)?|[rw])\.)?h(\d+)\./;

/** What a token begins with, after its kind's tag, when its caller acquires with `holdFor`. */
export function throttleTag(holdFor: number | undefined): string {
  return holdFor === undefined ? '' : `h${holdFor}.`;
}

/** The `holdFor` a token was made with (see {@link throttleTag}); `undefined` for none. */
export function holdForOfToken(token: string): number | undefined {
  const match = HOLD_FOR.exec(token);
  return match ? Number(match[1]) : undefined;
}

/**
 * What is left, in whole ms, of the window of the holder with `token` and fencing token
 * `fence`, at the store's clock `nowUs` (µs): `min(holdFor, fence / 1000 + holdFor − now)`,
 * rounded up; `undefined` when the holder is no throttle, its fencing token cannot date its
 * grant, or its window has closed (its work outlasted it: a plain conflict).
 */
export function windowLeftOf(
  token: string,
  fence: number | undefined,
  nowUs: number,
): number | undefined {
  const holdFor = holdForOfToken(token);
  if (holdFor === undefined || fence === undefined || fence > nowUs + FENCE_AHEAD_US) {
    return undefined;
  }
  const left = Math.ceil(Math.min(holdFor, (fence - nowUs) / 1000 + holdFor));
  return left > 0 ? left : undefined;
}

/**
 * The window of a refusal by several holders (a semaphore's permits, a read-write lock's
 * shares): open only if every holder's is, and then until the soonest of them closes, when
 * room may open; `undefined` otherwise (a plain conflict).
 */
export function sharedWindowLeft(windows: readonly (number | undefined)[]): number | undefined {
  if (windows.length === 0) return undefined;
  let soonest = Infinity;
  for (const window of windows) {
    if (window === undefined) return undefined;
    soonest = Math.min(soonest, window);
  }
  return soonest;
}
