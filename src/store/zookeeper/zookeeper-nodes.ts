import type { Client, Event, Stat, Transaction } from 'node-zookeeper-client';
import { contenderPrefix } from './zookeeper-paths.js';
import {
  codeOf,
  EPHEMERAL_SEQUENTIAL,
  interrupted,
  ZK_BAD_VERSION,
  ZK_NO_NODE,
  ZK_NODE_EXISTS,
  type ZooKeeperSession,
} from './zookeeper-session.js';

/** The data of a contender's node: none (a renewal rewrites it, see `touched`). */
const EMPTY = Buffer.alloc(0);

/**
 * How many times the store makes an operation whose calls were interrupted (the connection
 * dropped, or the session expired, before their answers came; see `interrupted`). Calls made
 * meanwhile wait in the client's queue for the next connection, so the tries come no faster
 * than connections do.
 */
export const CALL_TRIES = 3;

/**
 * Runs `operation`, and again while its calls are interrupted, up to {@link CALL_TRIES}
 * times: each try first learns what the interrupted one did.
 */
export async function retried<T>(operation: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await operation();
    } catch (error) {
      if (tries >= CALL_TRIES || !interrupted(error)) throw error;
    }
  }
}

/** A time in a node's Stat (`ctime`, `mtime`: 8 bytes, big-endian), in ms since the epoch. */
export function serverTimeOf(time: Buffer): number {
  return Number(time.readBigInt64BE(0));
}

/** A node's version and the server time of its last write, from its Stat. */
function writeOf(stat: Stat): { version: number; writtenAt: number } {
  return { version: stat.version, writtenAt: serverTimeOf(stat.mtime) };
}

/** What a call answers when its node is gone, for calls where that is no failure. */
export function absentIfNoNode(error: unknown): undefined {
  if (codeOf(error) === ZK_NO_NODE) return undefined;
  throw error;
}

/**
 * The calls that the ZooKeeper store makes on the tree, one request of the session each, with
 * the answers it expects (a node gone, already there, or changed meanwhile) told apart from
 * failures.
 */
export class ZooKeeperNodes {
  constructor(readonly session: ZooKeeperSession) {}

  /** The children of `path`; none when it is gone. */
  async children(path: string): Promise<string[]> {
    try {
      return await this.session.call<string[]>((client, done) => client.getChildren(path, done));
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return [];
      throw error;
    }
  }

  stat(path: string): Promise<Stat | undefined> {
    return this.session.call<Stat | undefined>((client, done) =>
      client.exists(path, (error, stat) => done(error, stat ?? undefined)),
    );
  }

  /** A node's data, its version, and the server time of its last write (`mtime`). */
  async read(
    path: string,
  ): Promise<{ data: Buffer; version: number; writtenAt: number } | undefined> {
    try {
      return await this.session.call((client, done) =>
        client.getData(path, (error, data, stat) =>
          done(error, error ? undefined : { data, ...writeOf(stat) }),
        ),
      );
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return undefined;
      throw error;
    }
  }

  /** Creates a persistent node; `false` when it already exists. */
  async created(path: string, data?: Buffer): Promise<boolean> {
    try {
      await this.session.call<string>((client: Client, done) =>
        data ? client.create(path, data, done) : client.create(path, done),
      );
      return true;
    } catch (error) {
      if (codeOf(error) === ZK_NODE_EXISTS) return false;
      throw error;
    }
  }

  /** Creates the ephemeral sequential node of `token` under `parent`: its path. */
  createContender(parent: string, token: string): Promise<string> {
    return this.session.call<string>((client, done) =>
      client.create(`${parent}/${contenderPrefix(token)}`, EPHEMERAL_SEQUENTIAL, done),
    );
  }

  /** Sets a node's data if it still has `version`; `false` when it changed meanwhile. */
  async replaced(path: string, data: Buffer, version: number): Promise<boolean> {
    try {
      await this.session.call<Stat>((client, done) => client.setData(path, data, version, done));
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === ZK_BAD_VERSION || code === ZK_NO_NODE) return false;
      throw error;
    }
  }

  /**
   * Writes nothing new to our own node, to learn whether it and its session live. A write goes
   * through the leader, which checks the session: its success proves the session alive when it
   * was sent, which a read does not (a follower cut off from the leader answers reads until it
   * notices, while the leader may expire the session and let another holder in). `false` when
   * the node is gone.
   */
  async touched(path: string): Promise<boolean> {
    try {
      await this.session.call<Stat>((client, done) => client.setData(path, EMPTY, -1, done));
      return true;
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return false;
      throw error;
    }
  }

  /**
   * The server's clock: the time the leader gave an empty write to `path` (which nobody watches
   * for data), in ms since the epoch; `undefined` when the node is gone. Every server dates a
   * write with the leader's clock, so all callers read one clock, whatever their own say.
   */
  async writtenAt(path: string): Promise<number | undefined> {
    try {
      const stat = await this.session.call<Stat>((client, done) =>
        client.setData(path, EMPTY, -1, done),
      );
      return serverTimeOf(stat.mtime);
    } catch (error) {
      return absentIfNoNode(error);
    }
  }

  /** Deletes a node if it still has `version`; `false` when it is gone or changed. */
  async removedAt(path: string, version: number): Promise<boolean> {
    try {
      await this.session.call<void>((client, done) => client.remove(path, version, done));
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === ZK_BAD_VERSION || code === ZK_NO_NODE) return false;
      throw error;
    }
  }

  /** Applies the operations that `build` adds to a transaction, all or none. */
  committed(build: (transaction: Transaction) => Transaction): Promise<void> {
    return this.session.call<void>((client, done) =>
      build(client.transaction()).commit((error) => done(error, undefined)),
    );
  }

  /** Deletes a node, whatever its version; fails with ZooKeeper's code when it cannot. */
  remove(path: string): Promise<void> {
    return this.session.call<void>((client, done) => client.remove(path, -1, done));
  }

  /** Reads `path` and sets `watcher` on it; `undefined` when it is gone (nothing to watch). */
  watchData(path: string, watcher: (event: Event) => void): Promise<true | undefined> {
    return this.session
      .call<Buffer>((client, done) => client.getData(path, watcher, done))
      .then(() => true as const, absentIfNoNode);
  }

  /** The children of `path`, setting `watcher` on them; `undefined` when `path` is gone. */
  watchChildren(path: string, watcher: (event: Event) => void): Promise<string[] | undefined> {
    return this.session
      .call<string[]>((client, done) => client.getChildren(path, watcher, done))
      .then((answer) => answer, absentIfNoNode);
  }
}
