import { monotonicNow } from './clock.js';

/** First and largest delay of the fallback re-check, for when a release message is lost. */
const FIRST_BACKOFF = 50;
const MAX_BACKOFF = 1_000;

/**
 * The fallback re-check of a key's waiters: should a release message be lost, the head tries
 * again after a delay bounded by the holder's remaining TTL and by a jittered exponential
 * backoff, which starts over whenever a release is heard.
 */
export class Recheck {
  private timer?: NodeJS.Timeout;
  private at = Infinity;
  private backoff = FIRST_BACKOFF;

  constructor(private readonly run: () => void) {}

  /** Starts the backoff over. */
  reset(): void {
    this.backoff = FIRST_BACKOFF;
  }

  /**
   * Arms the re-check, within `pttl` + 1 ms if that is known (≥ 0); with `sooner`, only if it
   * comes before the one armed.
   */
  arm(pttl: number, sooner = false): void {
    const jittered = this.backoff * (0.75 + Math.random() / 2);
    const delay = pttl >= 0 ? Math.min(jittered, pttl + 1) : jittered;
    if (sooner && monotonicNow() + delay >= this.at) return;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
    this.stop();
    this.at = monotonicNow() + delay;
    this.timer = setTimeout(() => {
      this.at = Infinity;
      this.run();
    }, delay);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.at = Infinity;
  }
}
