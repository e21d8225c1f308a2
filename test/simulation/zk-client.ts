import { EventEmitter } from 'node:events';
import type { Link, Network } from './network.js';
import type { Names } from './sim-store.js';
import type { Place } from './world.js';
import {
  creation,
  long,
  nameOf,
  STATES,
  statOf,
  ZkEvent,
  ZkException,
  type Callback,
  type Watcher,
  type WatchKind,
} from './zk-protocol.js';
import {
  ZK_CODES,
  ZK_EVENTS,
  ZkFailure,
  type ServerConnection,
  type Session,
  type ZkOp,
  type ZkServer,
  type ZNode,
} from './zk-server.js';

/** Where a connection string leads in the simulation: the server, and the instance's place. */
export interface Endpoint {
  readonly server: ZkServer;
  readonly network: Network;
  readonly place: Place;
  readonly names: Names;
}

const endpoints = new Map<string, Endpoint>();

/** Lets the clients that `connectionString` names reach `endpoint` (until the next run's). */
export function serve(connectionString: string, endpoint: Endpoint): void {
  endpoints.set(connectionString, endpoint);
}

/** No answer: the request reached a session that had ended (the server closes its connection). */
const DROPPED = Symbol('dropped');
type Answer<T> = T | ZkFailure | typeof DROPPED;

/**
 * A client of the simulated server, with the subset of node-zookeeper-client's API that the
 * store uses. Its requests, handshake and pings are round trips on a connection of its own
 * through the network; watch events and the news of its session's expiry come back on the
 * connection's replies, in order with them. It pings every third of the session timeout, so
 * a stopped process, a stalled connection or a paused server lets its session expire.
 */
class SimZooKeeperClient extends EventEmitter {
  private state = STATES.DISCONNECTED;
  private sessionId = 0;
  private granted = 0;
  private ended = false;
  private pinger?: NodeJS.Timeout;
  private readonly link: Link;
  private readonly connection: ServerConnection;
  private readonly watchers = new Map<WatchKind, Map<string, Set<Watcher>>>();

  constructor(
    private readonly endpoint: Endpoint,
    private readonly requested: number,
  ) {
    super();
    this.link = endpoint.network.link(endpoint.place);
    this.connection = {
      event: (type, path) =>
        endpoint.network.push(this.link, `zk ${nameOf(ZK_EVENTS, type)} ${this.shown(path)}`, () =>
          this.fire(type, path),
        ),
      expired: () => endpoint.network.push(this.link, 'zk session expired', () => this.expire()),
    };
  }

  connect(): void {
    const { server, network } = this.endpoint;
    const handshake = () => Promise.resolve(server.connect(this.connection, this.requested));
    void network
      .roundTrip(this.link, 'zk connect', handshake, ({ id }) => `session ${id}`)
      .then(({ id, timeout }) => {
        if (this.ended) return;
        [this.sessionId, this.granted, this.state] = [id, timeout, STATES.SYNC_CONNECTED];
        this.pinger = setInterval(() => this.ping(), Math.floor(timeout / 3));
        this.emit('connected');
      });
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.pinger);
    const { server, network } = this.endpoint;
    const close = () => Promise.resolve(server.close(this.connection));
    void network
      .roundTrip(this.link, 'zk close', close, () => 'closed')
      .then(() => {
        this.state = STATES.DISCONNECTED;
        this.emit('disconnected');
      });
  }

  getState = () => this.state;
  getSessionId = () => long(this.sessionId);
  getSessionTimeout = () => this.granted || this.requested;

  getChildren(path: string, ...args: unknown[]): void {
    const [watcher, callback] = this.watcherAnd(args);
    this.request(
      `getChildren ${this.shown(path)}${watcher ? ' watch' : ''}`,
      (session) => this.endpoint.server.getChildren(session, path, watcher !== undefined),
      (children) => children.map((name) => this.shown(name)).join(','),
      (error, children) => {
        if (!error && watcher) this.watch('child', path, watcher);
        callback(error, children, undefined);
      },
    );
  }

  exists(path: string, ...args: unknown[]): void {
    const [watcher, callback] = this.watcherAnd(args);
    this.request(
      `exists ${this.shown(path)}${watcher ? ' watch' : ''}`,
      (session) => this.endpoint.server.exists(session, path, watcher !== undefined) ?? null,
      (node) => (node ? `zxid=${node.czxid}` : 'none'),
      (error, node) => {
        if (!error && watcher) this.watch(node ? 'data' : 'existence', path, watcher);
        callback(error, node ? statOf(node) : null);
      },
    );
  }

  getData(path: string, ...args: unknown[]): void {
    const [watcher, callback] = this.watcherAnd(args);
    this.request(
      `getData ${this.shown(path)}${watcher ? ' watch' : ''}`,
      (session) => this.endpoint.server.getData(session, path, watcher !== undefined),
      (node) => `version=${node.version}`,
      (error, node) => {
        if (!error && watcher) this.watch('data', path, watcher);
        callback(error, node?.data, node && statOf(node));
      },
    );
  }

  create(path: string, ...args: unknown[]): void {
    const { op, callback } = creation(path, args);
    this.single(op, callback, (result) => [result]);
  }

  setData(path: string, data: Buffer, version: number, callback: Callback): void {
    this.single({ type: 'setData', path, data, version }, callback, (result) => [
      statOf(result as ZNode),
    ]);
  }

  remove(path: string, version: number | Callback, callback?: Callback): void {
    const [v, done] = typeof version === 'function' ? [-1, version] : [version, callback!];
    this.single({ type: 'remove', path, version: v }, done, () => []);
  }

  transaction() {
    const ops: ZkOp[] = [];
    const builder = {
      create: (path: string, ...args: unknown[]) => (ops.push(creation(path, args).op), builder),
      setData: (path: string, data: Buffer, version = -1) => (
        ops.push({ type: 'setData', path, data, version }),
        builder
      ),
      remove: (path: string, version = -1) => (
        ops.push({ type: 'remove', path, version }),
        builder
      ),
      check: (path: string, version = -1) => (ops.push({ type: 'check', path, version }), builder),
      commit: (callback: Callback) =>
        this.request(
          `multi ${ops.map((op) => `${op.type} ${this.shown(op.path)}`).join('; ')}`,
          (session) => this.endpoint.server.multi(session, ops),
          () => 'ok',
          (error, results) => callback(error, results),
        ),
    };
    return builder;
  }

  private single(op: ZkOp, callback: Callback, results: (result: unknown) => unknown[]): void {
    const version = op.type === 'create' ? ` mode=${op.mode}` : ` version=${op.version}`;
    this.request(
      `${op.type} ${this.shown(op.path)}${version}`,
      (session) => this.endpoint.server.single(session, op),
      (result) =>
        typeof result === 'string' ? this.shown(result) : result ? `zxid=${result.mzxid}` : 'ok',
      (error, result) => (error ? callback(error) : callback(null, ...results(result))),
    );
  }

  /** One request: applied by the server on arrival; its answer calls back, unless none comes. */
  private request<T>(
    what: string,
    handle: (session: Session) => T | ZkFailure,
    told: (result: T) => string,
    answered: (error: ZkException | null, result?: T) => void,
  ): void {
    if (this.ended) return;
    const { server, network } = this.endpoint;
    const apply = (): Promise<Answer<T>> => {
      const session = server.heard(this.connection);
      return Promise.resolve(session ? handle(session) : DROPPED);
    };
    const tell = (answer: Answer<T>) =>
      answer === DROPPED
        ? 'no session'
        : answer instanceof ZkFailure
          ? nameOf(ZK_CODES, answer.code)
          : told(answer);
    void network.roundTrip(this.link, `zk ${what}`, apply, tell).then((answer) => {
      if (answer === DROPPED || this.ended) return;
      if (answer instanceof ZkFailure) answered(new ZkException(answer.code));
      else answered(null, answer);
    });
  }

  private ping(): void {
    const apply = () => Promise.resolve(this.endpoint.server.heard(this.connection) !== undefined);
    void this.endpoint.network.roundTrip(this.link, 'zk ping', apply, (live) =>
      live ? 'ok' : 'no session',
    );
  }

  private expire(): void {
    if (this.ended) return;
    this.ended = true;
    this.state = STATES.EXPIRED;
    clearInterval(this.pinger);
    this.emit('expired');
  }

  private watcherAnd(args: unknown[]): [Watcher | undefined, Callback] {
    return args.length > 1
      ? [args[0] as Watcher, args[1] as Callback]
      : [undefined, args[0] as Callback];
  }

  /** Keeps `watcher` for the next event of its kind on `path`: once, however often it is set. */
  private watch(kind: WatchKind, path: string, watcher: Watcher): void {
    let byPath = this.watchers.get(kind);
    if (!byPath) this.watchers.set(kind, (byPath = new Map<string, Set<Watcher>>()));
    let set = byPath.get(path);
    if (!set) byPath.set(path, (set = new Set()));
    set.add(watcher);
  }

  /** An event: the watchers it concerns are told, and forgotten (as the client library does). */
  private fire(type: number, path: string): void {
    if (this.ended) return;
    const kinds: WatchKind[] =
      type === ZK_EVENTS.NODE_CHILDREN_CHANGED
        ? ['child']
        : type === ZK_EVENTS.NODE_DELETED
          ? ['data', 'child']
          : ['data', 'existence'];
    const event = new ZkEvent(type, path);
    for (const kind of kinds) {
      const watchers = this.watchers.get(kind)?.get(path);
      this.watchers.get(kind)?.delete(path);
      for (const watcher of watchers ?? []) watcher(event);
    }
  }

  /** A path for the trace, with a contender's token named as the run first met it. */
  private shown(path: string): string {
    const at = path.lastIndexOf('/') + 1;
    const name = path.slice(at);
    const dash = name.lastIndexOf('-');
    if (dash < 0 || !/[0-9a-f]{32}/.test(name.slice(0, dash))) return path;
    return `${path.slice(0, at)}${this.endpoint.names.of(name.slice(0, dash))}${name.slice(dash)}`;
  }
}

/** The fake `node-zookeeper-client` module that the simulation's stores load. */
export const simZooKeeperClient = {
  createClient(connectionString: string, options: { sessionTimeout?: number } = {}) {
    const endpoint = endpoints.get(connectionString);
    if (!endpoint) throw new Error(`no simulated ZooKeeper at ${connectionString}`);
    return new SimZooKeeperClient(endpoint, options.sessionTimeout ?? 30_000);
  },
  Exception: { ...ZK_CODES, create: (code: number, path?: string) => new ZkException(code, path) },
  CreateMode: { PERSISTENT: 0, EPHEMERAL: 1, PERSISTENT_SEQUENTIAL: 2, EPHEMERAL_SEQUENTIAL: 3 },
  Event: ZK_EVENTS,
  State: STATES,
};
