/** Longest pause before retrying a renewal that failed to reach the store. */
export const MAX_RETRY_DELAY = 1_000;

/**
 * Locks whose renewals one tick takes (in one request) before it lets the event loop run other
 * work: writing a request for more, and confirming its reply, holds the event loop for more
 * than about a millisecond (with 100,000 locks held, slices of 500 put the p99 of a 1 ms
 * probe's delay at 3.2–3.7 ms; slices of 125 at 1.9–2.2 ms). The next slice follows a reply
 * (see `Watchdog.continueTick`).
 */
export const SLICE = 125;
