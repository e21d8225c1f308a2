/**
 * Requests that must reach the server in the order this process sent them, though each runs on
 * whichever pooled connection is free: a request waits until the requests sent before it on
 * any of its ids have settled (answered or failed, not merely timed out), and no longer. An id
 * is forgotten as soon as its last request settles, so what is kept is bounded by the requests
 * in flight.
 */
export class SendOrder {
  /** Per id, the last request sent on it, settled. */
  private readonly last = new Map<string, Promise<void>>();

  /** How many ids have a request in flight. */
  get size(): number {
    return this.last.size;
  }

  /** Whether a request on `id` is still on its way. */
  pending(id: string): boolean {
    return this.last.has(id);
  }

  /**
   * Runs `call` once the requests queued before it on any of `ids` have settled (at once when
   * there are none), and queues it on each of `ids`. Call it when the request is sent: the
   * order of the calls is the order kept.
   */
  run<T>(ids: readonly string[], call: () => Promise<T>): Promise<T> {
    const before: Promise<void>[] = [];
    for (const id of ids) {
      const last = this.last.get(id);
      if (last) before.push(last);
    }
    const mine = before.length === 0 ? call() : Promise.all(before).then(call);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    for (const id of ids) this.last.set(id, settled);
    void settled.then(() => {
      for (const id of ids) if (this.last.get(id) === settled) this.last.delete(id);
    });
    return mine;
  }
}

/** What the requests for one lock (one holder of a key) are ordered by; keys have no NUL. */
export function lockOrderId(key: string, token: string): string {
  return `${key}\0${token}`;
}
