import type { Event } from 'node-zookeeper-client';

/** One node's watch: who listens, and what setting it answered. */
interface SharedWatch<T> {
  listeners: Set<(event: Event) => void>;
  answer: Promise<T | undefined>;
}

/**
 * One watch of the client per node, however many contenders of this process wait on it (a
 * writer watched by a dozen readers, a semaphore's line by a dozen waiters): the client library
 * keeps a listener per distinct watcher function on a node, and Node warns past ten. A watch
 * fires once: its listeners are told, and whoever still waits sets the next one.
 */
export class SharedWatches<T> {
  private readonly watches = new Map<string, SharedWatch<T>>();

  /**
   * Adds `listener` to the watch on `path`, which `set` sets (giving the client the watcher)
   * unless it is set or on its way; resolves with what setting it answered, `undefined` when
   * there was nothing to watch (the node is gone), in which case the listener is not told.
   */
  join(
    path: string,
    listener: (event: Event) => void,
    set: (watcher: (event: Event) => void) => Promise<T | undefined>,
  ): Promise<T | undefined> {
    let watch = this.watches.get(path);
    if (!watch) {
      const listeners = new Set<(event: Event) => void>();
      const created: SharedWatch<T> = {
        listeners,
        answer: set((event) => {
          this.forget(path, created);
          for (const listen of listeners) listen(event);
        }),
      };
      const unset = () => this.forget(path, created);
      created.answer.then((answer) => answer === undefined && unset(), unset);
      this.watches.set(path, created);
      watch = created;
    }
    watch.listeners.add(listener);
    return watch.answer;
  }

  /** The session ended, and its watches with it: none of them will fire. */
  clear(): void {
    this.watches.clear();
  }

  private forget(path: string, watch: SharedWatch<T>): void {
    if (this.watches.get(path) === watch) this.watches.delete(path);
  }
}
