import { monotonicNow } from '../../engine/clock.js';
import type { AcquireAttempt } from '../lock-store.interface.js';

/**
 * How many times an attempt that ended in a split vote is made again. Contenders that ask the
 * masters at the same moment can each win some of them and none a majority (with a master
 * lost, two contenders split the two that are left); each withdraws, and a caller that may not
 * wait would give up on a lock that nobody holds. So each tries again after a random pause, as
 * RedLock prescribes, and the first to come back takes the lock from free masters. Two that
 * come back within a round trip of each other split again, which on a loaded machine (round
 * trips of 10 ms and more) happens often enough that the window doubles with each retry:
 * five retries leave about one chance in a million that all of them split, and cost at most
 * about 1.5 s.
 */
const SPLIT_RETRIES = 5;
/**
 * The first window of that pause, in ms; it is as long as the attempt took when that is
 * longer (a master that did not answer in time), and it doubles with each retry.
 */
const SPLIT_JITTER = 50;
/** The longest window of that pause, in ms (a slow master makes the first long already). */
const MAX_SPLIT_JITTER = 1_000;

/** One attempt across the masters. */
export interface Vote {
  attempt: AcquireAttempt;
  /** Some masters granted the lock, too few to hold it, and no failures decided it. */
  split: boolean;
}

/**
 * Makes `attempt` until it does not end in a split vote, at most {@link SPLIT_RETRIES} times
 * more, or until the store is `closed`: what the last one answered.
 */
export async function unsplit(
  attempt: () => Promise<Vote>,
  closed: () => boolean,
): Promise<AcquireAttempt> {
  for (let retries = 0; ; retries++) {
    const started = monotonicNow();
    const vote = await attempt();
    if (!vote.split || retries === SPLIT_RETRIES) return vote.attempt;
    const first = Math.max(SPLIT_JITTER, monotonicNow() - started);
    const window = Math.min(first * 2 ** retries, MAX_SPLIT_JITTER);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * window));
    if (closed()) return vote.attempt;
  }
}
