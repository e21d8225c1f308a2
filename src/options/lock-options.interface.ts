import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { MemoryLockSpace } from '../store/memory/memory-space.js';

/** One Redis server: a `redis://` / `rediss://` URL, ioredis options, or an ioredis client. */
export type RedisServerConfig = string | RedisOptions | Redis;

/** A Redis Cluster for the module to connect to: its startup nodes and ioredis options. */
export interface RedisClusterConfig {
  cluster: ClusterNode[];
  clusterOptions?: ClusterOptions;
}

/**
 * A ZooKeeper ensemble for the locks (the `zookeeper` module option, in its long form).
 */
export interface ZooKeeperOptions {
  /** `'host:port[,host:port…]'`, optionally followed by a chroot path. */
  connectionString: string;
  /**
   * The session timeout asked of the server, in ms: the lease of every lock of this process
   * (a crashed process's locks go when its session expires). Default: 1.5 × the module's
   * `ttl` if given, else 30 000. The server clamps it into its own bounds (by default 2 to 20
   * times its tickTime).
   */
  sessionTimeout?: number;
  /** The node under which the locks live. Default `'/locks'`. */
  root?: string;
}

/**
 * Options of {@link LockModule.forRoot} (and what a `forRootAsync` factory returns).
 */
export interface LockModuleOptions {
  /**
   * Where the locks live:
   * - one Redis: a `redis://` / `rediss://` URL, ioredis options, or an ioredis `Redis`
   *   client. ioredis options with `sentinels` and `name` follow a Sentinel-managed master.
   * - Redis Cluster: an ioredis `Cluster` client, or `{ cluster: nodes, clusterOptions? }`.
   * - RedLock: an array of at least 3 independent masters (URLs, options or clients). A lock
   *   is held when a majority of them granted it within its validity.
   *
   * A client passed in is reused and never closed by the module; a client the module creates
   * connects on its first command (so that a failed boot leaves no connection open) and is
   * closed on shutdown. Default: `redis://127.0.0.1:6379`.
   */
  redis?: RedisServerConfig | Cluster | RedisClusterConfig | RedisServerConfig[];
  /**
   * Instead of Redis, a ZooKeeper ensemble: `'zk1:2181,zk2:2181,zk3:2181'` or
   * {@link ZooKeeperOptions}. Needs the package `node-zookeeper-client`. A lock's validity is
   * bounded by the session (its `ttl` may be at most two thirds of the session timeout);
   * `holdFor`, `watchdog: false`, `fair: false` and `waitForReplicas` are refused. See
   * docs/zookeeper.md.
   */
  zookeeper?: string | ZooKeeperOptions;
  /** Prepended to every key. Default `'lock:'`. Must not contain `{` or `}`. */
  keyPrefix?: string;
  /**
   * Lock time-to-live in ms. Default 30 000 (with `zookeeper`: two thirds of the session
   * timeout).
   */
  ttl?: number;
  /** How long `acquire()` waits for a held lock by default, in ms (`Infinity` allowed). Default 10 000. */
  waitTimeout?: number;
  /** Renew held locks every `ttl / 3` while they are held. Default `true`. */
  watchdog?: boolean;
  /**
   * Serve waiters first come, first served across all processes: a waiter takes a place in a
   * queue kept in the store beside the lock, and a released lock is handed straight to the
   * longest-waiting live waiter. With `false`, waiters race for a released lock (each process
   * still serves its own callers in order). Default `true`.
   */
  fair?: boolean;
  /**
   * Where locks live: `'redis'` (the default), or `'memory'`, a store inside this process with
   * the same semantics that is NOT distributed, for single-instance apps and unit tests. With
   * `'memory'`, leave `redis` unset.
   */
  store?: 'redis' | 'memory';
  /**
   * With `store: 'memory'`: the space whose locks this module shares, instead of the one that
   * every memory store of the process shares. A new space per unit test isolates the tests.
   */
  memorySpace?: MemoryLockSpace;
  /** Longest wait for one Redis round trip before it counts as a connection failure, in ms. Default 5 000. */
  commandTimeout?: number;
  /**
   * RedLock only: longest wait for one master's answer, in ms, far below the TTL, so that a
   * slow or dead master costs an acquisition no more than this. Default 250.
   */
  nodeTimeout?: number;
  /**
   * The share of a TTL by which the library's idea of a lock's validity undercuts Redis's, to
   * allow for clock drift between this process and Redis (plus 2 ms). Default 0.01.
   */
  driftFactor?: number;
  /**
   * One Redis (or Sentinel) only: after each acquisition or renewal, wait with `WAIT` until
   * `replicas` replicas acknowledged it, for at most `timeout` ms. Fails closed: an acquisition
   * that too few replicas acknowledged is undone and rejects with `LockReplicationError`; a
   * renewal that they did not acknowledge does not count. Default: off.
   */
  waitForReplicas?: { replicas: number; timeout: number };
}

/** Options of one acquisition; each overrides the module's default. */
export interface AcquireOptions {
  /** Lock time-to-live in ms. */
  ttl?: number;
  /** How long to wait for a held lock, in ms; `0` fails at once, `Infinity` waits forever. */
  waitTimeout?: number;
  /** Renew the lock every `ttl / 3` while it is held. */
  watchdog?: boolean;
  /**
   * Throttle mode: when the work ends (`using`, `@WithLock`) or the lock is released, it is not
   * deleted but left to expire `holdFor` ms after it was taken (or deleted at once if that
   * moment has passed). Meanwhile callers that use `holdFor` too get a throttled
   * `LockNotAcquiredError` (`429 Too Many Requests` over HTTP) with the window's remaining time.
   */
  holdFor?: number;
  /**
   * Abandons the wait when aborted: the caller leaves the queue at once and the call rejects
   * with the signal's reason (also when it was aborted before the call). A lock acquired just
   * as it aborts is given back. Once the lock is held, the signal has no effect.
   */
  signal?: AbortSignal;
  /**
   * A counting semaphore: up to `limit` callers hold the key at once, each with a permit of its
   * own (token, fencing token, watchdog, signal), served in arrival order. An integer from 1;
   * `1` (the default) is the mutex. Every caller of one key must give the same `limit` (else
   * `LockKindError`). Not with `mode`. Not on RedLock.
   */
  limit?: number;
  /**
   * A read-write lock: `'read'` holders share the key, a `'write'` holder excludes everyone.
   * Callers are served in arrival order, so readers that come after a waiting writer wait
   * behind it. Give `mode` on every caller of the key, writers included: a plain (mutex)
   * caller is not a writer of the read-write lock (see `LockKindError`). Not on RedLock.
   */
  mode?: 'read' | 'write';
}

/** Where the locks live, once validated. */
export type ResolvedRedis =
  | { topology: 'single'; config: RedisServerConfig }
  | { topology: 'cluster'; config: Cluster | RedisClusterConfig }
  | { topology: 'redlock'; nodes: RedisServerConfig[] };

/** The ZooKeeper backend's options, once validated. */
export type ResolvedZooKeeper = Required<ZooKeeperOptions>;

/** Module options after validation, with every default filled in. */
export interface ResolvedLockOptions {
  store: 'redis' | 'memory' | 'zookeeper';
  memorySpace?: MemoryLockSpace;
  fair: boolean;
  redis: ResolvedRedis;
  /** Set when `store` is `'zookeeper'`. */
  zookeeper?: ResolvedZooKeeper;
  keyPrefix: string;
  ttl: number;
  waitTimeout: number;
  watchdog: boolean;
  commandTimeout: number;
  nodeTimeout: number;
  driftFactor: number;
  waitForReplicas?: { replicas: number; timeout: number };
}

/** Per-acquisition options after validation. */
export type ResolvedAcquireOptions = Pick<
  ResolvedLockOptions,
  'ttl' | 'waitTimeout' | 'watchdog'
> & {
  holdFor?: number;
  signal?: AbortSignal;
  limit?: number;
  mode?: 'read' | 'write';
};
