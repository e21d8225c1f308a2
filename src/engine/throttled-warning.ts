import { monotonicNow } from './clock.js';

/**
 * A warning passed on at most once per `intervalMs`: the first of a run goes out at once, and
 * the next one to go out tells how many it stands for. Renewals fail by the request, so an
 * outage with many locks held would otherwise write hundreds of lines a second.
 */
export function throttledWarning(
  warn: (message: string) => void,
  intervalMs: number,
  now: () => number = monotonicNow,
): (message: string) => void {
  let quietUntil = -Infinity;
  let heldBack = 0;
  return (message) => {
    const at = now();
    if (at < quietUntil) {
      heldBack++;
      return;
    }
    quietUntil = at + intervalMs;
    warn(heldBack === 0 ? message : `${message} (and ${heldBack} more like it before)`);
    heldBack = 0;
  };
}
