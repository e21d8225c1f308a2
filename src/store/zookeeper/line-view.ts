import { kindOfToken } from '../lock-kind.js';
import type { StoredHold, StoredLock } from '../lock-store.interface.js';
import { standing } from './zookeeper-kinds.js';
import type { LockNodes } from './lock-nodes.js';
import type { ThrottleWindows } from './throttle-windows.js';
import { absentIfNoNode, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { inLine, tokenOfNode } from './zookeeper-paths.js';
import { fencingTokenOf } from './zookeeper-session.js';

/**
 * Who holds the lock whose node is `path`, and how many wait, as its line of contenders tells:
 * each node stands where its kind puts it (see `standing`), and a holder's fencing token is its
 * node's creation zxid. A hold lasts as long as its holder's session: its `ttlMs` is -1. A node
 * at odds with the kind ahead of it (which leaves as soon as its contender looks) counts as
 * neither.
 * @param name the lock's name, for the error of a zxid beyond a safe integer
 */
export async function lineView(
  nodes: ZooKeeperNodes,
  path: string,
  name: string,
): Promise<StoredLock> {
  const { holding, waiting } = await standings(nodes, path);
  const stats = await Promise.all(holding.map((node) => nodes.stat(`${path}/${node}`)));
  const holders: StoredHold[] = [];
  holding.forEach((node, i) => {
    const stat = stats[i];
    // A node gone meanwhile held no more when its stat was read.
    if (stat) {
      holders.push({
        token: tokenOfNode(node),
        ttlMs: -1,
        fencingToken: fencingTokenOf(name, stat),
      });
    }
  });
  return { holders, waiting };
}

/** The names of the nodes that hold the lock whose node is `path`, and how many wait. */
export async function standings(
  nodes: ZooKeeperNodes,
  path: string,
): Promise<{ holding: string[]; waiting: number }> {
  const line = inLine(await nodes.children(path));
  const holding: string[] = [];
  let waiting = 0;
  line.forEach((node, place) => {
    const where = standing(line, place, kindOfToken(node));
    if ('conflict' in where) return;
    if (where.holds) holding.push(node);
    else waiting++;
  });
  return { holding, waiting };
}

/**
 * Deletes the nodes that hold the lock whose node is `path` (another session's ephemeral nodes
 * may be deleted like any node): their successors' watches fire as on a release, and each
 * evicted holder's next renewal finds its node gone. Then the lock's node, if nobody waits.
 * Resolves how many holders were evicted.
 */
export async function evictHolders(
  nodes: ZooKeeperNodes,
  lockNodes: LockNodes,
  path: string,
): Promise<number> {
  const { holding } = await standings(nodes, path);
  const removed = await Promise.all(
    holding.map((node) => nodes.remove(`${path}/${node}`).then(() => true, absentIfNoNode)),
  );
  await lockNodes.removeIfEmpty(path);
  return removed.filter(Boolean).length;
}

/**
 * Whether the lock whose node is `path` is taken: a contender holds or waits, or a throttle
 * window (see {@link ThrottleWindows}) is still closed.
 */
export async function isTaken(
  nodes: ZooKeeperNodes,
  windows: ThrottleWindows,
  path: string,
  key: string,
): Promise<boolean> {
  const [children, window] = await Promise.all([nodes.children(path), windows.read(key)]);
  if (children.length > 0) return true;
  return window !== undefined && (await windows.closedFor(window)) > 0;
}
