import type { Contender, Contenders } from './contender.js';
import type { LockNodes } from './lock-nodes.js';
import type { ThrottleWindows } from './throttle-windows.js';
import { CALL_TRIES, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { contenderPrefix } from './zookeeper-paths.js';
import { codeOf, interrupted, ZK_NO_NODE, type ZooKeeperSession } from './zookeeper-session.js';

/** How soon a deletion that failed (the connection was lost) is tried again, in ms. */
const LEAVE_RETRY_DELAY = 200;

/**
 * How contenders leave their line: their node is deleted, then the lock's node if that left it
 * empty. A lock is never handed over directly: the successor's watch fires. A deletion that
 * fails is retried in the background while the session lives: a node left behind would hold
 * the line until the session ends, as no TTL ends it.
 */
export class Departures {
  /** Deletions to try again. */
  private readonly retries = new Set<NodeJS.Timeout>();
  /** Set once the store closes: its session has ended, and its nodes with it. */
  private closed = false;

  constructor(
    private readonly session: ZooKeeperSession,
    private readonly nodes: ZooKeeperNodes,
    private readonly lockNodes: LockNodes,
    private readonly contenders: Contenders,
  ) {}

  /**
   * The holder leaves, its node replaced by a window that keeps the key taken until the
   * monotonic time `endsAt` (see {@link ThrottleWindows}); `false` when its node was gone.
   * Should that fail, its node goes anyway: a node left behind would hold the key while the
   * session lives.
   */
  async leaveWithWindow(
    contender: Contender,
    windows: ThrottleWindows,
    endsAt: number,
  ): Promise<boolean> {
    try {
      const closed = await windows.close(contender, endsAt);
      this.contenders.forget(contender);
      await this.lockNodes.removeIfEmpty(contender.parent).catch(() => undefined);
      return closed;
    } catch (error) {
      this.leave(contender).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Deletes the contender's node, then the lock's node if that left it empty; `false` when its
   * node was gone already (with its session, or never created).
   */
  async leave(contender: Contender): Promise<boolean> {
    for (let tries = 1; ; tries++) {
      if (contender.session !== this.session.current) {
        this.contenders.forget(contender);
        return false;
      }
      const deleting = this.deleteNodesOf(contender, tries > 1);
      // Sent right behind the deletion, applied after it: one round trip for both.
      // An empty lock node left by a lost answer costs one node, until the key's next release.
      const emptying = contender.name ? this.emptyLockNode(contender) : undefined;
      let deleted: boolean;
      try {
        deleted = await deleting;
      } catch (error) {
        if (tries < CALL_TRIES && interrupted(error)) continue;
        this.retryLeave(contender);
        throw error;
      }
      this.contenders.forget(contender);
      await (emptying ?? this.emptyLockNode(contender));
      return deleted;
    }
  }

  /**
   * Ends the retries, and starts none after: the session ends, and its nodes with it. (A
   * departure that fails after the close, because the session is closed, would otherwise be
   * tried again every 200 ms for as long as the process lives.)
   */
  close(): void {
    this.closed = true;
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }

  /**
   * Deletes the contender's node; when the answer to its creation was lost, the nodes its token
   * names (at most one). `false` when there was none. After an interrupted deletion (`again`),
   * a node found gone in the same session was deleted by that deletion: nobody else deletes the
   * ephemeral nodes of a live session.
   */
  private async deleteNodesOf(contender: Contender, again: boolean): Promise<boolean> {
    const names = contender.name
      ? [contender.name]
      : (await this.nodes.children(contender.parent)).filter((name) =>
          name.startsWith(contenderPrefix(contender.token)),
        );
    let deleted = false;
    for (const name of names) {
      try {
        await this.nodes.remove(`${contender.parent}/${name}`);
        deleted = true;
      } catch (error) {
        if (codeOf(error) !== ZK_NO_NODE) throw error;
        deleted ||= again && contender.name !== undefined;
      }
    }
    return deleted;
  }

  private emptyLockNode(contender: Contender): Promise<void> {
    return this.lockNodes.removeIfEmpty(contender.parent).catch(() => undefined);
  }

  private retryLeave(contender: Contender): void {
    contender.departed = true;
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      if (this.contenders.isCurrent(contender)) this.leave(contender).catch(() => undefined);
    }, LEAVE_RETRY_DELAY);
    timer.unref();
    this.retries.add(timer);
  }
}
