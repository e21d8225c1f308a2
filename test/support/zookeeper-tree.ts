import zookeeper, { type Client, type Stat } from 'node-zookeeper-client';
import { boundHandshakes } from './zookeeper-handshake.js';

/**
 * A plain ZooKeeper client beside the library's, to look at the tree behind its back: which
 * nodes a lock has, their creation zxids, and what is left after release.
 */
export class ZooKeeperTree {
  private constructor(private readonly client: Client) {}

  static async connect(connectionString: string): Promise<ZooKeeperTree> {
    // A long session: on a loaded machine a short one expired while the test looked on, and
    // an expired client answers nothing more.
    const client = zookeeper.createClient(connectionString, { sessionTimeout: 20_000 });
    const connected = new Promise<void>((resolve) => client.once('connected', resolve));
    boundHandshakes(client, 2_000);
    client.connect();
    await connected;
    return new ZooKeeperTree(client);
  }

  /** The children of `path` ([] when it does not exist), in name order. */
  children(path: string): Promise<string[]> {
    return readAgainOnLoss(
      () =>
        new Promise((resolve, reject) =>
          this.client.getChildren(path, (error, children) => {
            const code = (error as { code?: number } | null)?.code;
            if (code === zookeeper.Exception.NO_NODE) resolve([]);
            else if (error) reject(asError(error));
            else resolve([...children].sort());
          }),
        ),
    );
  }

  /** Every node below `path`, as paths relative to it. */
  async below(path: string): Promise<string[]> {
    const found: string[] = [];
    for (const child of await this.children(path)) {
      found.push(child);
      for (const grandchild of await this.below(`${path}/${child}`)) {
        found.push(`${child}/${grandchild}`);
      }
    }
    return found;
  }

  stat(path: string): Promise<Stat | undefined> {
    return new Promise((resolve, reject) =>
      this.client.exists(path, (error, stat) =>
        error ? reject(asError(error)) : resolve(stat ?? undefined),
      ),
    );
  }

  /** A node's creation zxid, as a number. */
  async czxid(path: string): Promise<number> {
    const stat = await this.stat(path);
    if (!stat) throw new Error(`no node ${path}`);
    return Number(stat.czxid.readBigUInt64BE(0));
  }

  getData(path: string): Promise<string> {
    return new Promise((resolve, reject) =>
      this.client.getData(path, (error, data) =>
        error ? reject(asError(error)) : resolve(String(data)),
      ),
    );
  }

  /** Creates an ephemeral sequential node of this tree's own session; its path. */
  createEphemeralSequential(prefix: string): Promise<string> {
    return new Promise((resolve, reject) =>
      this.client.create(prefix, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) =>
        error ? reject(asError(error)) : resolve(path),
      ),
    );
  }

  remove(path: string): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.remove(path, (error) => (error ? reject(asError(error)) : resolve())),
    );
  }

  close(): void {
    this.client.close();
  }
}

/**
 * A read made again while this client's connection is lost (a read is safe to repeat): on a
 * loaded machine the test's own client can lose its connection for a moment. At most ~5 s.
 */
async function readAgainOnLoss<T>(read: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await read();
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code !== zookeeper.Exception.CONNECTION_LOSS || tries >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
