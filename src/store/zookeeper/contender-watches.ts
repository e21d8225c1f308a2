import type { Event } from 'node-zookeeper-client';
import { kindOfToken } from '../lock-kind.js';
import type { Contender, Contenders } from './contender.js';
import { SharedWatches } from './shared-watches.js';
import { standing } from './zookeeper-kinds.js';
import type { ZooKeeperNodes } from './zookeeper-nodes.js';
import { inLine } from './zookeeper-paths.js';

/**
 * The watches that wake waiting contenders: of the node just ahead of a contender (or of the
 * nearest writer, for a reader), or of a semaphore's whole line. The watches of this process
 * are shared between its contenders (see {@link SharedWatches}).
 */
export class ContenderWatches {
  /** How many watches of a line semaphores' waiters have set (see `watchLine`). */
  private lineWatchIds = 0;
  private readonly nodeWatches = new SharedWatches<true>();
  private readonly lineWatches = new SharedWatches<string[]>();

  constructor(
    private readonly nodes: ZooKeeperNodes,
    private readonly contenders: Contenders,
  ) {}

  /**
   * Watches `path` for its deletion; `false` when it is already gone. The holder's renewals
   * write to its node (see `ZooKeeperNodes.touched`), which fires the watch too: it is set
   * again then.
   */
  async watch(path: string, onDeleted: () => void): Promise<boolean> {
    const listener = (event: Event) => {
      if (event.getName() !== 'NODE_DATA_CHANGED') {
        onDeleted();
        return;
      }
      // Set again without prompting anybody: an attempt now would only find the holder there.
      // Should this fail, the waiter is woken to look for itself at once, rather than at its
      // re-check (a connection error then does not end its wait).
      this.watch(path, onDeleted).then(
        (present) => present || onDeleted(),
        () => onDeleted(),
      );
    };
    const present = await this.nodeWatches.join(path, listener, (watcher) =>
      this.nodes.watchData(path, watcher),
    );
    return present === true;
  }

  /**
   * Watches the line of a semaphore's waiter for any change until it may hold (a departure
   * anywhere ahead of it may let it in, not only its predecessor's), and only then wakes it:
   * every waiter of the key is told of every change (a herd), but looks at it here, as the
   * engine lets one waiter of a process try at a time, and a waiter woken in vain would hold
   * up those of its process behind it. `false` when it may hold already, or its node is gone:
   * look again.
   */
  async watchLine(contender: Contender): Promise<boolean> {
    const id = ++this.lineWatchIds;
    contender.lineWatch = id;
    const changed = () => {
      if (contender.lineWatch !== id || !this.contenders.isCurrent(contender)) return;
      contender.lineWatch = undefined;
      if (contender.departed) return;
      this.watchLine(contender).then(
        (waits) => waits || contender.wake(),
        // Its attempt will meet the error, or set the watch again.
        () => contender.wake(),
      );
    };
    try {
      const children = await this.lineWatches.join(contender.parent, changed, (watcher) =>
        this.nodes.watchChildren(contender.parent, watcher),
      );
      if (children !== undefined && waits(contender, children)) return true;
    } catch (error) {
      if (contender.lineWatch === id) contender.lineWatch = undefined;
      throw error;
    }
    // Its watch outlives the wait: it finds itself stale when it fires.
    if (contender.lineWatch === id) contender.lineWatch = undefined;
    return false;
  }

  /** The session ended, and its watches with it: none of them will fire. */
  clear(): void {
    this.nodeWatches.clear();
    this.lineWatches.clear();
  }
}

/** Whether the contender, whose line holds `children`, stands in it and may not hold yet. */
function waits(contender: Contender, children: string[]): boolean {
  const line = inLine(children);
  const place = line.indexOf(contender.name ?? '');
  if (place < 0) return false;
  const where = standing(line, place, kindOfToken(contender.token));
  return 'holds' in where && !where.holds;
}
