import zookeeper, { type Client, type Event, type Exception } from 'node-zookeeper-client';

/** A node-zookeeper-client callback call as a promise. */
function call<T>(
  start: (done: (error: Error | Exception | null, value: T) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) =>
    start((error, value) => (error ? reject(new Error(String(error))) : resolve(value))),
  );
}

/**
 * The floor of a ZooKeeper lock: the lock recipe of the ZooKeeper documentation on a bare
 * node-zookeeper-client session, with nothing around it. Acquire creates an ephemeral sequential
 * node under the lock's node and lists the children; the lowest holds the lock, anybody else
 * watches the node just before its own and lists again when it goes. Release deletes the node.
 * Uncontended, that is three requests per acquire + release; a handover is the holder's delete,
 * the watch event, and the next holder's list. No fencing token beyond the node's sequence, no
 * session-loss handling, no time limit: the least a correct lock does.
 */
export class ZooKeeperRecipeFloor {
  private readonly made = new Set<string>();

  private constructor(
    private readonly client: Client,
    private readonly root: string,
  ) {}

  static async connect(address: string, root: string): Promise<ZooKeeperRecipeFloor> {
    const client = zookeeper.createClient(address, { sessionTimeout: 10_000 });
    const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
    client.connect();
    await connected;
    return new ZooKeeperRecipeFloor(client, root);
  }

  /** Takes the lock `name`; resolves with the path of the node that holds it. */
  async acquire(name: string): Promise<string> {
    const dir = `${this.root}/${name}`;
    if (!this.made.has(dir)) {
      await call<void>((done) => this.client.mkdirp(dir, (error) => done(error, undefined)));
      this.made.add(dir);
    }
    const path = await call<string>((done) =>
      this.client.create(`${dir}/lock-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done),
    );
    const mine = path.slice(dir.length + 1);
    for (;;) {
      const children = await call<string[]>((done) => this.client.getChildren(dir, done));
      children.sort();
      const at = children.indexOf(mine);
      if (at === 0) return path;
      await this.gone(`${dir}/${children[at - 1]}`);
    }
  }

  release(path: string): Promise<void> {
    return call<void>((done) => this.client.remove(path, -1, (error) => done(error, undefined)));
  }

  close(): void {
    this.client.close();
  }

  /** Resolves once the node at `path` is deleted (at once if it is gone already). */
  private gone(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.exists(
        path,
        (event: Event) => {
          if (event.getType() === zookeeper.Event.NODE_DELETED) resolve();
        },
        (error, stat) => {
          if (error) reject(new Error(String(error)));
          else if (!stat) resolve();
        },
      );
    });
  }
}
