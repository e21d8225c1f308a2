import type { AcquireAttempt } from '../lock-store.interface.js';

/**
 * The refusal of an attempt across RedLock masters, from the masters' answers (grants
 * included: a split vote is refused too). Its `pttl` is the soonest any refusing master's holder
 * expires. It is a throttle's only if the masters that refused with an open window (see
 * `AcquireAttempt.windowLeft`) leave no majority free: then, until enough of those windows
 * close that one is, which is its `windowLeft`. A master that did not answer, or that refused
 * without a window, may free up at any moment for all the caller knows: a refusal that needs
 * it to make a majority is a plain conflict.
 */
export function refusalAcross(
  answers: readonly AcquireAttempt[],
  masters: number,
  quorum: number,
): AcquireAttempt {
  const pttls: number[] = [];
  const windows: number[] = [];
  for (const answer of answers) {
    if (answer.acquired) continue;
    if (answer.pttl >= 0) pttls.push(answer.pttl);
    if (answer.windowLeft !== undefined) windows.push(answer.windowLeft);
  }
  const pttl = pttls.length > 0 ? Math.min(...pttls) : -1;
  const windowLeft = windowAcross(windows, masters, quorum);
  return windowLeft === undefined
    ? { acquired: false, pttl }
    : { acquired: false, pttl, windowLeft };
}

/**
 * How long the masters' open `windows` keep a majority of `masters` from being free: until the
 * one that leaves `quorum` masters without a window closes; `undefined` when a majority is
 * free of them already.
 */
export function windowAcross(
  windows: readonly number[],
  masters: number,
  quorum: number,
): number | undefined {
  const mustClose = windows.length - (masters - quorum);
  if (mustClose <= 0) return undefined;
  return [...windows].sort((a, b) => a - b)[mustClose - 1];
}
