import { OrderedCreations } from './ordered-creations.js';
import { absentIfNoNode, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { codeOf, ZK_NO_NODE, ZK_NOT_EMPTY } from './zookeeper-session.js';

/**
 * The persistent nodes that contenders' nodes live under: the root, created once per session,
 * and each lock's node, created with its first contender and deleted by the departure that
 * leaves it empty, so that the tree holds no trace of a lock nobody holds or waits for.
 */
export class LockNodes {
  private rootReady?: Promise<void>;
  /** The creations of contenders' nodes, sent in the order their callers came. */
  private readonly creations: OrderedCreations;

  constructor(
    private readonly nodes: ZooKeeperNodes,
    private readonly root: string,
  ) {
    this.creations = new OrderedCreations({
      createNode: (parent, token) => nodes.createContender(parent, token),
      // Should the root be missing, its error says why, not the lock node's NO_NODE.
      createParent: (parent) => Promise.all([this.ensureRoot(), nodes.created(parent)]),
      removeNode: (path) => nodes.remove(path).catch(absentIfNoNode),
    });
  }

  /**
   * The root node and its ancestors, created once per session. Their creations are sent at
   * once, each behind its parent's: a session's requests are applied in the order they are
   * sent, so a request sent after them need not wait for their answers.
   */
  ensureRoot(): Promise<void> {
    this.rootReady ??= Promise.all(
      ancestorsOf(this.root).map((path) => this.nodes.created(path)),
    ).then(
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
   * {@link OrderedCreations}), sent right behind the root's creation and, when `parentMissing`,
   * the lock node's: nothing waits for an answer before the creation is sent. Resolves the name
   * of the node.
   * @param parentMissing the lock node may be missing (this store knows of no node under it)
   * @param sending called once the creation is sent (again, when it must be)
   */
  async createContender(
    parent: string,
    token: string,
    parentMissing: boolean,
    sending: () => void,
  ): Promise<string> {
    // A root that could not be created fails the creation with NO_NODE, which creates it again.
    this.ensureRoot().catch(() => undefined);
    const path = await this.creations.create(parent, token, parentMissing, sending);
    return path.slice(parent.length + 1);
  }

  /** Deletes the lock's node `path` if no contender is left under it. */
  async removeIfEmpty(path: string): Promise<void> {
    try {
      await this.nodes.remove(path);
    } catch (error) {
      const code = codeOf(error);
      if (code !== ZK_NOT_EMPTY && code !== ZK_NO_NODE) throw error;
    }
  }

  /**
   * The store closes: creations still waiting for their turn or their answer fail, and the lock
   * nodes they were for are deleted if empty, by requests the session applies before it ends.
   */
  close(): void {
    for (const parent of this.creations.close(new Error('the lock store was closed'))) {
      this.removeIfEmpty(parent).catch(() => undefined);
    }
  }

  /** The session expired: the root is checked again by the next session's first creation. */
  sessionExpired(): void {
    this.rootReady = undefined;
  }
}

/** `/a`, `/a/b`, `/a/b/c` for the path `/a/b/c`: each node to create before the next. */
function ancestorsOf(path: string): string[] {
  const names = path.split('/').slice(1);
  return names.map((_, i) => `/${names.slice(0, i + 1).join('/')}`);
}
