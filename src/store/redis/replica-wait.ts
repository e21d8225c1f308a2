import type { RedisClientPort } from './redis-client.port.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import { LockReplicationError } from '../../lock.errors.js';
import type { TimedCommand } from '../timed-command.js';

/**
 * `waitForReplicas`: waits until enough replicas acknowledged the writes made on the store's
 * connection (WAIT). WAIT blocks the connection while it waits, so concurrent callers share:
 * one WAIT on its way covers the writes sent before it, and those made meanwhile share the
 * next one, sent when it returns.
 */
export class ReplicaWait {
  /**
   * How many times the connection has closed. A WAIT only vouches for writes made on its own
   * connection; one sent after a reconnect (to a new master, say) would vouch for nothing.
   */
  private closes = 0;
  private readonly stopCounting: () => void;
  /** The WAIT on its way, and the one queued behind it for the writes made meanwhile. */
  private waitSent?: Promise<number>;
  private waitNext?: Promise<number>;

  /** @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name */
  constructor(
    private readonly client: RedisClientPort,
    private readonly wanted: { replicas: number; timeout: number },
    private readonly command: TimedCommand,
    private readonly keyPrefix: string,
  ) {
    this.stopCounting = client.onClose(() => void this.closes++);
  }

  /** The connection that writes sent now go out on, to pass to {@link replicated}. */
  get connection(): number {
    return this.closes;
  }

  /**
   * Waits until enough replicas acknowledged the writes made on the connection so far, ours
   * included, which were sent while the connection was `connection`.
   * @throws LockReplicationError when too few did within the timeout, or the connection was
   *   replaced meanwhile
   */
  async replicated(key: string, operation: string, connection: number): Promise<void> {
    const acknowledged = await this.command(key, `${operation} WAIT`, () => this.sharedWait());
    const counted = this.closes === connection ? acknowledged : 0;
    if (counted < this.wanted.replicas) {
      const { replicas, timeout } = this.wanted;
      const name = lockNameOf(this.keyPrefix, key);
      throw new LockReplicationError(name, operation, counted, replicas, timeout);
    }
  }

  /**
   * How many replicas acknowledged the writes made on the connection so far, within the
   * timeout (0 once the connection was replaced meanwhile): what a health check reports.
   */
  async acknowledged(key: string): Promise<number> {
    const connection = this.closes;
    const acknowledged = await this.command(key, 'health WAIT', () => this.sharedWait());
    return this.closes === connection ? acknowledged : 0;
  }

  /** How many replicas each write waits for. */
  get wantedReplicas(): number {
    return this.wanted.replicas;
  }

  /** Stops counting the connection's closes. */
  close(): void {
    this.stopCounting();
  }

  /** A WAIT that covers every write made on the connection before this call. */
  private sharedWait(): Promise<number> {
    if (!this.waitSent) return this.sendWait();
    this.waitNext ??= this.waitSent
      .catch(() => undefined)
      .then(() => {
        this.waitNext = undefined;
        return this.sendWait();
      });
    return this.waitNext;
  }

  private sendWait(): Promise<number> {
    const sent = this.client.waitForReplicas(this.wanted.replicas, this.wanted.timeout);
    this.waitSent = sent;
    const done = () => {
      if (this.waitSent === sent) this.waitSent = undefined;
    };
    sent.then(done, done);
    return sent;
  }
}
