import type { Contender } from './contender.js';
import { holdForOfToken } from '../throttle-window.js';
import { serverTimeOf, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { tokenOfNode, windowPath } from './zookeeper-paths.js';
import { codeOf, ZK_NO_NODE, ZK_NODE_EXISTS } from './zookeeper-session.js';

/** A throttle's window on a key, as read from its node. */
export interface ThrottleWindow {
  readonly path: string;
  /** The server time (ms since the epoch) until which the key stays taken (see {@link endOf}). */
  readonly until: number;
  readonly version: number;
}

/** How many times a window's closing is tried when another caller's change of it comes first. */
const CLOSE_TRIES = 3;

/**
 * Throttle windows (`holdFor`) on ZooKeeper, dated by the server's clock: a holder that leaves
 * with `holdFor` replaces its ephemeral node, in one transaction, by a persistent node
 * `<key>.window` holding how much of `holdFor` was left since its grant (`keepFor`, counted on
 * its own monotonic clock up to the moment it sends that transaction). The window ends `keepFor`
 * ms after the server wrote the node (its `mtime`): the server's clock dates its start, a
 * duration its length. A caller that would hold the key first compares that end with a server
 * time of its own (its node's creation, or an empty write), so replicas whose clocks disagree
 * still agree on the window. A holder's grant, not its node's creation, starts the window: a
 * waiter may hold its node in the line long before it is granted the lock.
 *
 * What stays: the process that closed a window deletes its node once the server says it ended,
 * and any caller of the key that finds it ended deletes it too; one outlives its window only if
 * that process stopped before it ended and nobody asked for the key since: at most one node per
 * key, for windows open when a process stopped.
 */
export class ThrottleWindows {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly nodes: ZooKeeperNodes,
    private readonly root: string,
  ) {}

  /** The window on `key`, if it has a node. */
  async read(key: string): Promise<ThrottleWindow | undefined> {
    return this.readAt(windowPath(this.root, key));
  }

  /**
   * How many ms the window stays closed from the server time `now` (taken now if not given):
   * 0 once it ended, when its node is deleted.
   */
  async closedFor(window: ThrottleWindow, now?: number): Promise<number> {
    const at = now ?? (await this.nodes.writtenAt(this.root));
    if (at === undefined) return 0;
    if (at < window.until) return window.until - at;
    await this.nodes.removedAt(window.path, window.version);
    return 0;
  }

  /**
   * What is left of the window of the live holder whose node is `holder` under `parent`, when
   * its token says it is a throttle (`h<holdFor>.`), from the server time `now` (taken now if not
   * given): dated by its node's creation, which comes no later than its grant (it may have
   * waited in line), so its window ends no sooner than that says. While that is open, the
   * holder is a throttle in its window for sure, and a retry after it comes early, never late;
   * once it has closed the grant cannot be dated (the holder may have waited long), and the
   * refusal is a plain conflict: `undefined`.
   */
  async heldOpen(parent: string, holder: string, now?: number): Promise<number | undefined> {
    const holdFor = holdForOfToken(tokenOfNode(holder));
    if (holdFor === undefined) return undefined;
    const stat = await this.nodes.stat(`${parent}/${holder}`);
    const at = stat && (now ?? (await this.nodes.writtenAt(this.root)));
    if (stat === undefined || at === undefined) return undefined;
    const left = Math.min(holdFor, serverTimeOf(stat.ctime) + holdFor - at);
    return left > 0 ? left : undefined;
  }

  /**
   * The holder `contender` leaves, closing its key until the monotonic time `endsAt` (its grant
   * plus `holdFor`, on this process's clock) as the server dates it; `false` when its node was
   * gone (the lock was no longer its own).
   */
  async close(contender: Contender, endsAt: number): Promise<boolean> {
    const path = windowPath(this.root, contender.key);
    let keepFor = 0;
    const window = () => {
      // Counted when the write is sent: the server dates it later, so the window ends no sooner.
      keepFor = Math.max(0, Math.ceil(endsAt - performance.now()));
      return Buffer.from(JSON.stringify({ keepFor }));
    };
    for (let tries = 1; ; tries++) {
      try {
        await this.nodes.committed((transaction) =>
          (tries % 2 === 1
            ? transaction.create(path, window())
            : transaction.setData(path, window(), -1)
          ).remove(contender.path, -1),
        );
        this.expireLater(path, keepFor);
        return true;
      } catch (error) {
        const code = codeOf(error);
        // An ended window's node, found there (create) or deleted meanwhile (set): try the other.
        const windowRace = code === (tries % 2 === 1 ? ZK_NODE_EXISTS : ZK_NO_NODE);
        if (windowRace && tries < CLOSE_TRIES) continue;
        if (code === ZK_NO_NODE && tries % 2 === 1) return false;
        throw error;
      }
    }
  }

  /** Ends the deletions still to come: the next caller of each key deletes its window. */
  clear(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /** Deletes the window at `path` once it ended, looking again after `delay` ms. */
  private expireLater(path: string, delay: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.expire(path).catch(() => undefined);
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }

  private async expire(path: string): Promise<void> {
    const window = await this.readAt(path);
    if (!window) return;
    const left = await this.closedFor(window);
    if (left > 0) this.expireLater(path, left);
  }

  private async readAt(path: string): Promise<ThrottleWindow | undefined> {
    const found = await this.nodes.read(path);
    if (!found) return undefined;
    return { path, until: endOf(found.data, found.writtenAt), version: found.version };
  }
}

/**
 * The server time a window ends, from its node's data and the server time it was written: what
 * is left of `holdFor` (`{"keepFor":ms}`), counted from that write; or, from a node written by
 * an earlier version of this library, the server time itself. A node that is neither has ended.
 */
export function endOf(data: Buffer, writtenAt: number): number {
  const text = data.toString();
  const keepFor = /^\{"keepFor":(\d+)\}$/.exec(text)?.[1];
  if (keepFor !== undefined) return writtenAt + Number(keepFor);
  return /^\d+$/.test(text) ? Number(text) : 0;
}
