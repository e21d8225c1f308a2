/**
 * The ZooKeeper mode's look at the lock behind the library's back: a plain client of the
 * checker's own that lists the contenders' nodes under the run's root, so that the checker can
 * tell when a killed holder's node is gone, and that nothing is left at the end.
 */
import zookeeper from 'node-zookeeper-client';
import { boundHandshakes } from '../../support/zookeeper-handshake.js';

/** @param {unknown} error */
const codeOf = (error) => /** @type {{ code?: number } | null} */ (error)?.code;

export class ZooKeeperProbe {
  /** @param {import('node-zookeeper-client').Client} client */
  constructor(client) {
    this.client = client;
  }

  /**
   * @param {string} connectionString
   * @returns {Promise<ZooKeeperProbe>}
   */
  static async connect(connectionString) {
    const client = zookeeper.createClient(connectionString, { sessionTimeout: 10_000 });
    const connected = new Promise((resolve) => client.once('connected', () => resolve(undefined)));
    // The probe reads the tree right after the checker restarted the server.
    boundHandshakes(client, 2_000);
    client.connect();
    await connected;
    return new ZooKeeperProbe(client);
  }

  /**
   * The children of `path` ([] when it does not exist).
   * @param {string} path
   * @returns {Promise<string[]>}
   */
  children(path) {
    return new Promise((resolve, reject) =>
      this.client.getChildren(path, (error, children) => {
        if (codeOf(error) === zookeeper.Exception.NO_NODE) resolve([]);
        else if (error) reject(new Error(String(error)));
        else resolve(children);
      }),
    );
  }

  /**
   * Every node below `root`, as paths relative to it (two levels: locks and their contenders).
   * @param {string} root
   */
  async below(root) {
    /** @type {string[]} */
    const found = [];
    for (const lock of await this.children(root)) {
      found.push(lock);
      for (const node of await this.children(`${root}/${lock}`)) found.push(`${lock}/${node}`);
    }
    return found;
  }

  /**
   * Whether a contender node of the lock token `lockToken` is still under `root`.
   * @param {string} root
   * @param {string} lockToken
   */
  async hasNodeOf(root, lockToken) {
    return (await this.below(root)).some((path) => path.split('/')[1]?.startsWith(`${lockToken}-`));
  }

  /**
   * Deletes `path` (an empty node).
   * @param {string} path
   */
  remove(path) {
    return new Promise((resolve) => this.client.remove(path, () => resolve(undefined)));
  }

  close() {
    this.client.close();
  }
}
