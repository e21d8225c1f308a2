/**
 * Requests on their way to the store that shutdown must let finish before it cleans up or
 * closes the store: attempts (which may bring a lock) and releases (whose answer decides
 * whether the work's lock ended well).
 */
export class InFlight {
  private readonly pending = new Set<Promise<unknown>>();

  get size(): number {
    return this.pending.size;
  }

  /** Counts `request` in until it settles, and returns it. */
  track<T>(request: Promise<T>): Promise<T> {
    const forget = () => this.pending.delete(settled);
    const settled: Promise<unknown> = request.then(forget, forget);
    this.pending.add(settled);
    return request;
  }

  /** Resolves once every request counted in so far has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
}

/** Waits for `work`, but for `ms` at most. */
export async function within(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
