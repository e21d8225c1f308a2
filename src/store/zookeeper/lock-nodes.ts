import { OrderedCreations } from './ordered-creations.js';
import { absentIfNoNode, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { codeOf, ZK_NO_NODE, ZK_NOT_EMPTY } from './zookeeper-session.js';

/** How many deleted lock nodes the store remembers. */
const MAX_EMPTIED = 1_024;

/**
 * The persistent nodes that contenders' nodes live under: the root, created once per session,
 * and each lock's node, created with its first contender and deleted by the departure that
 * leaves it empty, so that the tree holds no trace of a lock nobody holds or waits for.
 */
export class LockNodes {
  private rootReady?: Promise<void>;
  /** Lock nodes this store deleted last (oldest first), to create again without a failed try. */
  private readonly emptied = new Set<string>();
  /** The creations of contenders' nodes, sent in the order their callers came. */
  private readonly creations: OrderedCreations;

  constructor(
    private readonly nodes: ZooKeeperNodes,
    private readonly root: string,
  ) {
    this.creations = new OrderedCreations({
      createNode: (parent, token) => nodes.createContender(parent, token),
      createParent: (parent) => nodes.created(parent),
      removeNode: (path) => nodes.remove(path).catch(absentIfNoNode),
    });
  }

  /** The root node (and its ancestors), created once per session. */
  ensureRoot(): Promise<void> {
    this.rootReady ??= this.nodes.createdWithAncestors(this.root).then(
      () => undefined,
      (error: unknown) => {
        this.rootReady = undefined;
        throw error;
      },
    );
    return this.rootReady;
  }

  /**
   * Creates the node of `token` under the lock's node `parent` in its caller's turn (see
   * {@link OrderedCreations}), and the lock's node first if need be: a lock node this store
   * deleted is created again right ahead of it, in the same round trip. Resolves the name of
   * the node.
   * @param sending called once the creation is sent (again, when it must be)
   */
  async createContender(parent: string, token: string, sending: () => void): Promise<string> {
    await this.ensureRoot();
    const path = await this.creations.create(parent, token, this.emptied.delete(parent), sending);
    return path.slice(parent.length + 1);
  }

  /** Deletes the lock's node `path` if no contender is left under it. */
  async removeIfEmpty(path: string): Promise<void> {
    try {
      await this.nodes.remove(path);
      this.emptied.add(path);
      if (this.emptied.size > MAX_EMPTIED) {
        const [oldest] = this.emptied;
        this.emptied.delete(oldest);
      }
    } catch (error) {
      const code = codeOf(error);
      if (code !== ZK_NOT_EMPTY && code !== ZK_NO_NODE) throw error;
    }
  }

  /** The store closes: creations still waiting for their turn or their answer fail. */
  close(): void {
    this.creations.close(new Error('the lock store was closed'));
  }

  /** The session expired: the root is checked again by the next session's first creation. */
  sessionExpired(): void {
    this.rootReady = undefined;
  }
}
