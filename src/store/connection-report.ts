import { monotonicNow } from '../engine/clock.js';
import { messageOf } from '../lock.errors.js';

/** How often, at most, the log says again that a store is still unreachable. */
export const OUTAGE_REPORT_INTERVAL = 30_000;

/**
 * What the log says of a store's connection while it fails: the first failure at once (an app
 * that boots with its store down says so in one line), then at most one line per
 * {@link OUTAGE_REPORT_INTERVAL} with how many failures it stands for, and one line when the
 * store can be reached again. A client retries every few hundred ms while the store is down,
 * and each retry fails: without this, every retry would be a line.
 */
export class ConnectionReport {
  private downSince?: number;
  private failures = 0;
  private reportedAt = -Infinity;
  private heldBack = 0;

  /**
   * @param what the store as the log names it (`Redis`)
   * @param where which of its servers, when there are several (` (host:port)`)
   * @param warn where the failures go
   * @param log where the recovery goes
   */
  constructor(
    private readonly what: string,
    private readonly where: string,
    private readonly warn: (message: string) => void,
    private readonly log: (message: string) => void,
    private readonly now: () => number = monotonicNow,
  ) {}

  /** The connection (or an attempt to open it) failed with `error`. */
  failed(error: unknown): void {
    const at = this.now();
    this.downSince ??= at;
    this.failures++;
    if (at - this.reportedAt < OUTAGE_REPORT_INTERVAL) {
      this.heldBack++;
      return;
    }
    const since =
      this.heldBack === 0 ? '' : ` (${this.heldBack} more failures since the last line)`;
    this.reportedAt = at;
    this.heldBack = 0;
    this.warn(
      `${this.what} connection error${this.where}: ${messageOf(error)}${since}. The client ` +
        'reconnects by itself; calls fail with LockConnectionError meanwhile (at once when they ' +
        'do not wait).',
    );
  }

  /** The connection is up again; nothing if it had not failed. */
  recovered(): void {
    if (this.downSince === undefined) return;
    const seconds = ((this.now() - this.downSince) / 1_000).toFixed(1);
    this.log(
      `${this.what}${this.where} reachable again after ${seconds} s ` +
        `(${this.failures} connection ${this.failures === 1 ? 'failure' : 'failures'})`,
    );
    this.downSince = undefined;
    this.failures = 0;
    this.heldBack = 0;
    this.reportedAt = -Infinity;
  }
}
