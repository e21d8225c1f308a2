/** How often a client that stopped answering is asked again (PING) whether it is back. */
const PROBE_INTERVAL = 1_000;

/**
 * GLIDE's failures that say the connection is gone or not answering. GLIDE reconnects by itself
 * and tells nobody: a request made meanwhile waits for the new connection until its
 * `requestTimeout` (a `TimeoutError`); one lost with its connection fails with a
 * `ConnectionError`; a closed client fails every request with a `ClosingError`.
 */
const CONNECTION_FAILURES = new Set(['TimeoutError', 'ConnectionError', 'ClosingError']);

/** Whether `error` is one of GLIDE's connection failures (by name: any copy of the package). */
export function isConnectionFailure(error: unknown): boolean {
  return error instanceof Error && CONNECTION_FAILURES.has(error.name);
}

/**
 * What the Redis client port says of a connection (reachable, errors, closes), for a GLIDE
 * client, which emits no connection events: read from the outcome of its requests. A request
 * that fails for want of a connection marks the client unreachable and tells the error and
 * close listeners, once; any answer marks it reachable again. While it is unreachable, asking
 * whether it is sends a PING (one at a time, at most one per {@link PROBE_INTERVAL}), so that
 * a client nobody sends requests to for being unreachable (a RedLock master) comes back, with
 * no timer to outlive the store.
 */
export class GlideHealth {
  private up = true;
  private closed = false;
  private probing = false;
  private probedAt = 0;
  private readonly errorListeners = new Set<(error: unknown) => void>();
  private readonly closeListeners = new Set<() => void>();

  /** @param ping one PING on the client */
  constructor(private readonly ping: () => Promise<unknown>) {}

  /** False from a connection failure until the client answers again, and once closed. */
  get reachable(): boolean {
    if (this.up || this.closed) return this.up && !this.closed;
    const now = performance.now();
    if (!this.probing && now - this.probedAt >= PROBE_INTERVAL) {
      this.probing = true;
      this.probedAt = now;
      const done = () => (this.probing = false);
      this.ping().then(done, done);
    }
    return false;
  }

  /** A request was answered. On the path of every request: one comparison when up. */
  answered(): void {
    this.up = true;
  }

  /** A request failed with `error`: a connection failure marks the client unreachable. */
  failed(error: unknown): void {
    if (!isConnectionFailure(error) || this.closed) return;
    if (error instanceof Error && error.name === 'ClosingError') this.closed = true;
    if (!this.up) return;
    this.up = false;
    for (const listener of [...this.closeListeners]) listener();
    for (const listener of [...this.errorListeners]) listener(error);
  }

  onError(listener: (error: unknown) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  onClose(listener: () => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** The client is being closed: it is unreachable from now on. */
  close(): void {
    this.closed = true;
  }
}
