import type { World } from './world.js';

/** ZooKeeper's error codes that the simulated server answers with (see its KeeperException). */
export const ZK_CODES = {
  OK: 0,
  CONNECTION_LOSS: -4,
  BAD_ARGUMENTS: -8,
  NO_NODE: -101,
  BAD_VERSION: -103,
  NO_CHILDREN_FOR_EPHEMERALS: -108,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
} as const;

/** The types of a watch event, as the protocol numbers them. */
export const ZK_EVENTS = {
  NODE_CREATED: 1,
  NODE_DELETED: 2,
  NODE_DATA_CHANGED: 3,
  NODE_CHILDREN_CHANGED: 4,
} as const;

/** A node of the tree. Replaced, never changed, so that a transaction can be undone. */
export interface ZNode {
  readonly data: Buffer;
  readonly czxid: number;
  readonly mzxid: number;
  readonly ctime: number;
  readonly mtime: number;
  readonly version: number;
  /** The session that owns an ephemeral node; 0 for a persistent one. */
  readonly owner: number;
}

/** One operation of a request (or of a transaction). */
export type ZkOp =
  | { type: 'create'; path: string; data: Buffer; mode: number }
  | { type: 'setData'; path: string; data: Buffer; version: number }
  | { type: 'remove'; path: string; version: number }
  | { type: 'check'; path: string; version: number };

/** What the server tells a connection on its own: a watch event, or that its session ended. */
export interface ServerConnection {
  event(type: number, path: string): void;
  expired(): void;
}

/** What the server did to a contender's node, for the checker (see `zk-backend.ts`). */
export interface TreeObserver {
  created(path: string, node: ZNode): void;
  deleted(path: string, node: ZNode): void;
  /** A request or ping reached the server. */
  heard(): void;
}

export interface Session {
  readonly id: number;
  readonly timeout: number;
  readonly connection: ServerConnection;
  lastHeard: number;
  ended: boolean;
  /** Paths whose data (or existence) this session watches, and whose children. */
  readonly dataWatches: Set<string>;
  readonly childWatches: Set<string>;
}

/** A failed operation: ZooKeeper's error code. */
export class ZkFailure {
  constructor(readonly code: number) {}
}

export const parentOf = (path: string) => path.slice(0, path.lastIndexOf('/')) || '/';
const SEQUENTIAL = 2;
const EPHEMERAL = 1;
/** Zxids begin in epoch 1, as a fresh ensemble's first leader numbers them. */
const FIRST_ZXID = 2 ** 32;

/**
 * A ZooKeeper server for the simulation: one tree shared by every instance, its sessions (each
 * expired once no request or ping reached the server for its timeout, which deletes its
 * ephemeral nodes), one-shot watches per session fired as ZooKeeper fires them, sequential
 * names from a counter per parent, and transactions applied all or nothing. Each request is
 * applied at once, when the network delivers it; what it answers, and the events it fires, go
 * back through the network (see `zk-client.ts`).
 */
export class ZkServer {
  readonly nodes = new Map<string, ZNode>([
    ['/', { data: Buffer.alloc(0), czxid: 0, mzxid: 0, ctime: 0, mtime: 0, version: 0, owner: 0 }],
  ]);
  readonly sessions = new Map<number, Session>();
  /** Sessions that ended with ephemeral nodes of their own, which went without a departure. */
  endedWithNodes = 0;
  private zxid = FIRST_ZXID;
  private readonly sequences = new Map<string, number>();
  private readonly connections = new Map<ServerConnection, Session>();
  /** Events and observations of the operation being applied, sent once it commits. */
  private effects: (() => void)[] = [];

  constructor(
    private readonly world: World,
    /** Until when the server applies nothing (the store pause of the seed's faults). */
    private readonly pausedUntil: () => number,
    private readonly observer?: TreeObserver,
  ) {}

  /** A handshake: a new session for `connection`; its id, and the timeout granted. */
  connect(connection: ServerConnection, timeout: number): { id: number; timeout: number } {
    const session: Session = {
      id: this.sessions.size + 1,
      timeout,
      connection,
      lastHeard: this.world.now(),
      ended: false,
      dataWatches: new Set(),
      childWatches: new Set(),
    };
    this.sessions.set(session.id, session);
    this.connections.set(connection, session);
    this.armExpiry(session, timeout);
    return { id: session.id, timeout };
  }

  /** The live session of `connection`, which a request or ping just reached; none once ended. */
  heard(connection: ServerConnection): Session | undefined {
    const session = this.connections.get(connection);
    this.observer?.heard();
    if (!session || session.ended) return undefined;
    session.lastHeard = this.world.now();
    return session;
  }

  /** The client closes its session: its ephemeral nodes go. */
  close(connection: ServerConnection): void {
    const session = this.heard(connection);
    if (session) this.end(session);
  }

  /** `exists`: a watch is set whether the node exists or not. */
  exists(session: Session, path: string, watch: boolean): ZNode | undefined {
    if (watch) session.dataWatches.add(path);
    return this.nodes.get(path);
  }

  getData(session: Session, path: string, watch: boolean): ZNode | ZkFailure {
    const node = this.nodes.get(path);
    if (!node) return new ZkFailure(ZK_CODES.NO_NODE);
    if (watch) session.dataWatches.add(path);
    return node;
  }

  getChildren(session: Session, path: string, watch: boolean): string[] | ZkFailure {
    if (!this.nodes.has(path)) return new ZkFailure(ZK_CODES.NO_NODE);
    if (watch) session.childWatches.add(path);
    return this.childrenOf(path);
  }

  /** Applies the operations in order, all or none; each one's result, or the first failure. */
  multi(session: Session, ops: readonly ZkOp[]): (string | ZNode | undefined)[] | ZkFailure {
    const saved = { nodes: new Map(this.nodes), sequences: new Map(this.sequences) };
    const zxid = ++this.zxid;
    const results: (string | ZNode | undefined)[] = [];
    for (const op of ops) {
      const result = this.apply(session, op, zxid);
      if (result instanceof ZkFailure) {
        this.nodes.clear();
        for (const [path, node] of saved.nodes) this.nodes.set(path, node);
        this.sequences.clear();
        for (const [path, next] of saved.sequences) this.sequences.set(path, next);
        this.effects = [];
        return result;
      }
      results.push(result);
    }
    for (const effect of this.effects.splice(0)) effect();
    return results;
  }

  /** One operation, as a transaction of its own. */
  single(session: Session, op: ZkOp): string | ZNode | undefined | ZkFailure {
    const results = this.multi(session, [op]);
    return results instanceof ZkFailure ? results : results[0];
  }

  private apply(session: Session, op: ZkOp, zxid: number): string | ZNode | undefined | ZkFailure {
    const node = this.nodes.get(op.path);
    if (op.type === 'create') return this.create(session, op, zxid);
    if (!node) return new ZkFailure(ZK_CODES.NO_NODE);
    if (op.version !== -1 && op.version !== node.version) {
      return new ZkFailure(ZK_CODES.BAD_VERSION);
    }
    if (op.type === 'check') return undefined;
    if (op.type === 'remove') {
      if (this.childrenOf(op.path).length > 0) return new ZkFailure(ZK_CODES.NOT_EMPTY);
      this.remove(op.path, node);
      return undefined;
    }
    const now = Date.now();
    const changed = { ...node, data: op.data, mzxid: zxid, mtime: now, version: node.version + 1 };
    this.nodes.set(op.path, changed);
    this.effects.push(() => this.trigger(op.path, ZK_EVENTS.NODE_DATA_CHANGED, ['data']));
    return changed;
  }

  private create(session: Session, op: ZkOp & { type: 'create' }, zxid: number) {
    const parentPath = parentOf(op.path);
    const parent = this.nodes.get(parentPath);
    if (!parent) return new ZkFailure(ZK_CODES.NO_NODE);
    if (parent.owner !== 0) return new ZkFailure(ZK_CODES.NO_CHILDREN_FOR_EPHEMERALS);
    let path = op.path;
    if (op.mode & SEQUENTIAL) {
      const next = this.sequences.get(parentPath) ?? 0;
      this.sequences.set(parentPath, next + 1);
      path += String(next).padStart(10, '0');
    }
    if (this.nodes.has(path)) return new ZkFailure(ZK_CODES.NODE_EXISTS);
    const now = Date.now();
    const owner = op.mode & EPHEMERAL ? session.id : 0;
    const node: ZNode = {
      data: op.data,
      czxid: zxid,
      mzxid: zxid,
      ctime: now,
      mtime: now,
      version: 0,
      owner,
    };
    this.nodes.set(path, node);
    this.effects.push(() => {
      this.observer?.created(path, node);
      this.trigger(path, ZK_EVENTS.NODE_CREATED, ['data']);
      this.trigger(parentPath, ZK_EVENTS.NODE_CHILDREN_CHANGED, ['child']);
    });
    return path;
  }

  private remove(path: string, node: ZNode): void {
    this.nodes.delete(path);
    this.sequences.delete(path);
    this.effects.push(() => {
      this.observer?.deleted(path, node);
      this.trigger(path, ZK_EVENTS.NODE_DELETED, ['data', 'child']);
      this.trigger(parentOf(path), ZK_EVENTS.NODE_CHILDREN_CHANGED, ['child']);
    });
  }

  /** The names of `path`'s children, in the order they were created. */
  childrenOf(path: string): string[] {
    const prefix = path === '/' ? '/' : `${path}/`;
    const names: string[] = [];
    for (const child of this.nodes.keys()) {
      if (child.startsWith(prefix) && child !== '/' && !child.includes('/', prefix.length)) {
        names.push(child.slice(prefix.length));
      }
    }
    return names;
  }

  /** Fires the watches of `path` of those kinds: one event per session, which they leave. */
  private trigger(path: string, type: number, kinds: readonly ('data' | 'child')[]): void {
    for (const session of this.sessions.values()) {
      let fired = false;
      for (const kind of kinds) {
        const watches = kind === 'data' ? session.dataWatches : session.childWatches;
        fired = watches.delete(path) || fired;
      }
      if (fired && !session.ended) session.connection.event(type, path);
    }
  }

  /** Ends a session: its ephemeral nodes go, their watchers told, and its own watches. */
  private end(session: Session): void {
    session.ended = true;
    session.dataWatches.clear();
    session.childWatches.clear();
    this.zxid++;
    const owned = [...this.nodes].filter(([, node]) => node.owner === session.id);
    for (const [path, node] of owned) this.remove(path, node);
    if (owned.length > 0) this.endedWithNodes++;
    for (const effect of this.effects.splice(0)) effect();
  }

  /**
   * Expires the session once nothing reached the server from it for its timeout. A paused
   * server expires nothing; when it goes on, what waited for it is applied first.
   */
  private armExpiry(session: Session, after: number): void {
    this.world.after(after, () => {
      if (session.ended) return;
      const now = this.world.now();
      if (this.pausedUntil() > now) return this.armExpiry(session, this.pausedUntil() + 1 - now);
      const due = session.lastHeard + session.timeout;
      if (now < due) return this.armExpiry(session, due - now);
      this.world.log(`store  session ${session.id} expired`);
      this.end(session);
      session.connection.expired();
    });
  }
}
