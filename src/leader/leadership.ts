/**
 * One term of this instance's leadership of an election, as a `@Leader` method receives it.
 *
 * @example
 * ```ts
 * @Leader('outbox-relay')
 * relay(leadership: Leadership) {
 *   const consumer = this.outbox.consume({ fence: leadership.epoch });
 *   leadership.signal.addEventListener('abort', () => void consumer.stop(), { once: true });
 * }
 * ```
 */
export interface Leadership {
  /** The election's name, as given to `@Leader`. */
  readonly name: string;
  /**
   * A fencing token for this term: greater than the epoch of every earlier leader of this
   * election, on whatever instance, also across restarts of the apps. Write it with everything
   * the leader does to a shared resource, so that the resource can refuse a deposed leader.
   */
  readonly epoch: number;
  /**
   * Aborted the moment this instance knows it no longer leads: the election's lock was lost
   * (before another instance can be elected), the instance resigned, or it is shutting down.
   * Its reason is a `LockLostError`.
   */
  readonly signal: AbortSignal;
  /**
   * Throws a `LockLostError` at once when this term no longer certainly leads: its signal
   * aborted, or its lock's validity (monotonic clock) has passed, even if no timer has run yet,
   * as after a process pause. Call it before each side effect only the leader may make.
   */
  throwIfLost(): void;
}

/** Options of `@Leader`. */
export interface LeaderOptions {
  /**
   * Time-to-live of the election's lock, in ms (default: the module's `ttl`): how long a
   * leader that died or was cut off holds the leadership before a standby takes over. The
   * watchdog renews it every third of it while this instance leads.
   */
  ttl?: number;
}
