import Module, { createRequire } from 'node:module';
import { kindOfToken } from '../../src/store/lock-kind.js';
import { loadZooKeeperClient } from '../../src/store/zookeeper/zookeeper-client.js';
import { inLine, tokenOfNode } from '../../src/store/zookeeper/zookeeper-paths.js';
import { ZooKeeperLockStore } from '../../src/store/zookeeper/zookeeper.store.js';
import type { Backend, Connection, StoreOptions } from './backend.js';
import type { Checker } from './checker.js';
import type { Network } from './network.js';
import type { Names, StoreSeen } from './sim-store.js';
import type { Place } from './world.js';
import { serve, simZooKeeperClient } from './zk-client.js';
import { ZkLiveness } from './zk-liveness.js';
import { parentOf, ZkServer, type TreeObserver } from './zk-server.js';

/** The node under which the run's locks live. */
const ROOT = '/locks';

/**
 * Makes `require('node-zookeeper-client')` give the simulation's client, for the store's
 * `loadZooKeeperClient` (which requires it on first use): in Node's module cache here, and,
 * under Jest, which keeps a registry of its own, through `jest.mock` in the spec.
 */
function injectClient(): void {
  const require = createRequire(import.meta.url);
  const path = require.resolve('node-zookeeper-client');
  const cache = (Module as unknown as { _cache: Record<string, Module> })._cache;
  if (cache[path]?.exports !== simZooKeeperClient) {
    const module = new Module(path);
    Object.assign(module, { filename: path, loaded: true, exports: simZooKeeperClient });
    cache[path] = module;
  }
  if ((loadZooKeeperClient('sim:2181') as unknown) !== simZooKeeperClient) {
    throw new Error('the ZooKeeper store would load the real client, not the simulated one');
  }
}

/**
 * The ZooKeeper-like server: one simulated ZooKeeper (see `zk-server.ts`), which each instance
 * reaches through the real `ZooKeeperLockStore` over the simulated client.
 */
export class ZooKeeperBackend implements Backend {
  readonly server: ZkServer;
  private readonly liveness: ZkLiveness;

  constructor(
    private readonly network: Network,
    private readonly names: Names,
    seen: StoreSeen,
    /** The session timeout every instance asks for. */
    readonly sessionTimeout: number,
    checker: Checker,
  ) {
    injectClient();
    const fail = (detail: string) => checker.fail('liveness', detail);
    const liveness = new ZkLiveness(network.world, names, fail, () => checker.slack);
    const server: ZkServer = new ZkServer(
      network.world,
      () => network.storePausedUntil,
      lineObserver(() => server, seen, liveness),
    );
    this.server = server;
    this.liveness = liveness;
  }

  connect(place: Place, options: StoreOptions, warn: (message: string) => void): Connection {
    const connectionString = `${place.name}.zk:2181`;
    serve(connectionString, {
      server: this.server,
      network: this.network,
      place,
      names: this.names,
    });
    const zookeeper = { connectionString, sessionTimeout: this.sessionTimeout, root: ROOT };
    const { commandTimeout, keyPrefix } = options;
    const settings = { ...zookeeper, commandTimeout, keyPrefix, onError: warn };
    const store = new WatchedStore(settings, place, this.liveness);
    // A killed process's connection closes; its session lives on until it times out.
    return { store, given: { zookeeper }, drop: () => undefined };
  }

  listened(): string[] {
    return [];
  }

  /**
   * Every session ended, and every contender's node with it. An empty lock node is left only
   * by a session that ended (closed or expired) with nodes of its own: its last contender's
   * node went without a departure, which would have deleted the lock node too.
   */
  leftovers(fail: (detail: string) => void): void {
    const { server } = this;
    const live = [...server.sessions.values()].filter((session) => !session.ended);
    if (live.length > 0) fail(`sessions left: ${live.map((session) => session.id).join(', ')}`);
    const ephemeral = [...server.nodes].filter(([, node]) => node.owner !== 0);
    if (ephemeral.length > 0) fail(`nodes left: ${ephemeral.map(([path]) => path).join(', ')}`);
    // A throttle's window node outlives its window when its process stopped while it was open
    // and nobody asked for the key since: at most one per key (docs/zookeeper.md).
    const locks = server.childrenOf(ROOT).filter((name) => !name.endsWith('.window'));
    if (locks.length > 0 && server.endedWithNodes === 0) {
      fail(`lock nodes left: ${locks.join(', ')}`);
    }
  }
}

/**
 * Tells the checker about each mutex's line as the server changes it: a contender's node
 * joins it (and holds if first), leaves it, and the next one first in line is granted the lock
 * with its node's creation zxid, its fencing token.
 */
function lineObserver(server: () => ZkServer, seen: StoreSeen, liveness: ZkLiveness): TreeObserver {
  const heads = new Map<string, string | undefined>();
  const contender = (path: string) => {
    const parent = parentOf(path);
    if (parentOf(parent) !== ROOT) return undefined;
    liveness.changed(server(), parent);
    const token = tokenOfNode(path.slice(parent.length + 1));
    if (kindOfToken(token).type !== 'mutex') return undefined;
    return { parent, key: decodeURIComponent(parent.slice(ROOT.length + 1)), token };
  };
  /** The line's first node, if it changed: its name. */
  const newHead = (parent: string) => {
    const head = inLine(server().childrenOf(parent))[0];
    if (head === heads.get(parent)) return undefined;
    heads.set(parent, head);
    return head;
  };
  return {
    heard: () => liveness.check(),
    created(path, node) {
      const { parent, key, token } = contender(path) ?? {};
      if (parent === undefined || key === undefined || token === undefined) return;
      const holds = newHead(parent) === path.slice(parent.length + 1);
      const reply = holds
        ? { acquired: true as const, fencingToken: node.czxid }
        : { acquired: false as const, pttl: -1 };
      // A node keeps its place for as long as its session lives: no reservation to lapse.
      seen.attempted(key, token, reply, { ttl: Infinity, queue: true });
    },
    deleted(path) {
      const { parent, key, token } = contender(path) ?? {};
      if (parent === undefined || key === undefined || token === undefined) return;
      seen.leftLine(key, token);
      const head = newHead(parent);
      const node = head && server().nodes.get(`${parent}/${head}`);
      if (head && node) seen.granted(key, tokenOfNode(head), node.czxid);
    },
  };
}

/** The ZooKeeper store, whose attempts and releases the liveness check hears of. */
class WatchedStore extends ZooKeeperLockStore {
  constructor(
    options: ConstructorParameters<typeof ZooKeeperLockStore>[0],
    private readonly place: Place,
    private readonly liveness: ZkLiveness,
  ) {
    super(options);
  }

  override acquire(...args: Parameters<ZooKeeperLockStore['acquire']>) {
    const token = args[1];
    this.liveness.attempt(this.place, token, 1);
    return super.acquire(...args).finally(() => this.liveness.attempt(this.place, token, -1));
  }

  override release(key: string, token: string) {
    this.liveness.release(token);
    return super.release(key, token);
  }
}
