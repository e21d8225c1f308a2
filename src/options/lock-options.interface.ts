import type { LockStore } from '../store/lock-store.interface.js';
import type {
  MemoryLockSpace,
  PostgresOptions,
  PostgresPool,
  ResolvedPostgres,
} from '../store/backends.js';
import type {
  GlideClientLike,
  IoRedisLikeClient,
  NodeRedisLikeClient,
  RedisLikeClient,
} from './redis-client-like.interface.js';
import type {
  RedisClusterNode,
  RedisClusterOptions,
  RedisConnectionOptions,
} from './redis-connection-options.interface.js';

export type {
  GlideClientLike,
  IoRedisLikeClient,
  NodeRedisLikeClient,
  RedisLikeClient,
} from './redis-client-like.interface.js';
export type {
  RedisClusterNode,
  RedisClusterOptions,
  RedisConnectionOptions,
} from './redis-connection-options.interface.js';

/**
 * One Redis server: a `redis://` / `rediss://` URL, ioredis options, or a client (ioredis,
 * iovalkey, node-redis, GLIDE).
 */
export type RedisServerConfig =
  string | RedisConnectionOptions | IoRedisLikeClient | NodeRedisLikeClient | GlideClientLike;

/** A Redis Cluster for the module to connect to: its startup nodes and ioredis options. */
export interface RedisClusterConfig {
  cluster: RedisClusterNode[];
  clusterOptions?: RedisClusterOptions;
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
   * - one Redis: a `redis://` / `rediss://` URL, ioredis options, or a client: an ioredis or
   *   iovalkey `Redis`, a node-redis client (`createClient`). Options with `sentinels` and
   *   `name` follow a Sentinel-managed master, as does a node-redis `createSentinel` client.
   * - Redis Cluster: an ioredis or iovalkey `Cluster`, a node-redis `createCluster` client, or
   *   `{ cluster: nodes, clusterOptions? }`.
   * - RedLock: an array of at least 3 independent masters (URLs, options or clients). A lock
   *   is held when a majority of them granted it within its validity.
   *
   * A client passed in is reused and never closed by the module; a client the module creates
   * connects on its first command (so that a failed boot leaves no connection open) and is
   * closed on shutdown. Default: `redis://127.0.0.1:6379`.
   */
  redis?: RedisServerConfig | RedisLikeClient | RedisClusterConfig | RedisServerConfig[];
  /**
   * The client library that connects from a URL or options given as `redis`:
   * - `'ioredis'` (the default), or `'iovalkey'` (its fork for Valkey): every ioredis option;
   * - `'node-redis'` (the `redis` package): of the options, `host`, `port`, `path`, `username`,
   *   `password`, `db`, `tls`, `connectTimeout`, and `sentinels` with `name`,
   *   `sentinelUsername`, `sentinelPassword`; for a Cluster, `clusterOptions.redisOptions`
   *   with `username`, `password`, `tls` and `connectTimeout`. Pass a client for the others.
   *
   * Each library is an optional peer dependency: install the one you use. A client passed as
   * `redis` speaks through its own library, whatever this says. See docs/clients.md.
   */
  redisClient?: 'ioredis' | 'iovalkey' | 'node-redis' | 'glide';
  /**
   * Instead of Redis, a ZooKeeper ensemble: `'zk1:2181,zk2:2181,zk3:2181'` or
   * {@link ZooKeeperOptions}. Needs the package `node-zookeeper-client`. A lock's validity is
   * bounded by the session (its `ttl` may be at most two thirds of the session timeout);
   * `holdFor`, `watchdog: false`, `fair: false` and `waitForReplicas` are refused. See
   * docs/zookeeper.md.
   */
  zookeeper?: string | ZooKeeperOptions;
  /**
   * Instead of Redis, a PostgreSQL database: a `postgres://` URL, the fields of a `pg`
   * `PoolConfig` (with `schema`, `table` and `listen`: {@link PostgresOptions}), or a `pg`
   * `Pool`, reused and never ended by the module. Needs the package `pg`. The library creates
   * its tables if they are missing. See docs/postgres.md.
   */
  postgres?: string | PostgresOptions | PostgresPool;
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
   * How long work already running under a lock may go on once the app shuts down, in ms
   * (`app.close()`, or a signal with `enableShutdownHooks()`). Meanwhile the watchdog keeps its
   * lock alive and each lock is released the moment its work ends; waiters and new calls are
   * refused with `LockShuttingDownError` (HTTP 503) so that clients retry on another instance.
   * When the grace runs out, the signals of the locks still held abort and the locks are
   * released. `0` ends them at once. Default 20 000: Kubernetes kills a pod 30 s after SIGTERM,
   * which leaves 10 s for a preStop hook and for the server to drain after the work.
   */
  shutdownGrace?: number;
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
   * `'memory'`, leave `redis` unset. Or a {@link LockStore} of your own (docs/own-store.md).
   */
  store?: 'redis' | 'memory' | LockStore;
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
  /**
   * Who holds, as `LockService.inspect()` shows it: the store keeps it with every hold and
   * place in line (in the lock's token). A non-empty string of at most 200 characters, e.g.
   * the pod's name. Default `${hostname}:${pid}`.
   */
  instanceId?: string;
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
   * moment has passed). Meanwhile every caller it refuses, whatever its own options, gets a
   * throttled `LockNotAcquiredError` (`429` over HTTP) with the window's remaining time.
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
   * How many of the semaphore's `limit` permits the caller takes at once, as one hold (one
   * token, fencing token and signal): an integer from 1 (the default) to `limit`. Served in
   * arrival order like every caller: a large request first in line is not overtaken by smaller
   * ones behind it, which wait until it fits. Not with `mode`.
   */
  permits?: number;
  /**
   * A read-write lock: `'read'` holders share the key, a `'write'` holder excludes everyone.
   * Callers are served in arrival order, so readers that come after a waiting writer wait
   * behind it. Give `mode` on every caller of the key, writers included: a plain (mutex)
   * caller is not a writer of the read-write lock (see `LockKindError`). Not on RedLock.
   */
  mode?: 'read' | 'write';
  /**
   * The lock's name in metrics and spans (`lock.name`): a low-cardinality name such as
   * `'order'`, instead of the default, the key with its last `:`-separated part replaced by `*`
   * (`order:42` → `order:*`). Has no effect on the lock itself. Up to 256 characters.
   */
  label?: string;
}

/** Where the locks live, once validated. */
export type ResolvedRedis =
  | { topology: 'single'; config: RedisServerConfig }
  | { topology: 'cluster'; config: RedisLikeClient | RedisClusterConfig }
  | { topology: 'redlock'; nodes: RedisServerConfig[] };

/** The ZooKeeper backend's options, once validated. */
export type ResolvedZooKeeper = Required<ZooKeeperOptions>;

/** What the module options of every backend hold once validated. */
export interface ResolvedCommonOptions {
  fair: boolean;
  keyPrefix: string;
  ttl: number;
  waitTimeout: number;
  watchdog: boolean;
  shutdownGrace: number;
  commandTimeout: number;
  driftFactor: number;
  instanceId: string;
}

/** One Redis, Sentinel, Cluster or RedLock's masters. */
export interface ResolvedRedisOptions extends ResolvedCommonOptions {
  store: 'redis';
  redis: ResolvedRedis;
  /** The library that connects from a URL or options. */
  redisClient: NonNullable<LockModuleOptions['redisClient']>;
  /** RedLock: the bound on each master's answer. */
  nodeTimeout: number;
  waitForReplicas?: { replicas: number; timeout: number };
}

/** The store inside this process. */
export interface ResolvedMemoryOptions extends ResolvedCommonOptions {
  store: 'memory';
  memorySpace?: MemoryLockSpace;
}

/** A ZooKeeper ensemble. */
export interface ResolvedZooKeeperOptions extends ResolvedCommonOptions {
  store: 'zookeeper';
  zookeeper: ResolvedZooKeeper;
}

/** A PostgreSQL database. */
export interface ResolvedPostgresOptions extends ResolvedCommonOptions {
  store: 'postgres';
  postgres: ResolvedPostgres;
}

/** A store of the user's own. */
export interface ResolvedOwnStoreOptions extends ResolvedCommonOptions {
  store: 'own';
  own: LockStore;
}

/** Module options after validation, with every default filled in: one shape per backend. */
export type ResolvedLockOptions =
  | ResolvedRedisOptions
  | ResolvedMemoryOptions
  | ResolvedZooKeeperOptions
  | ResolvedPostgresOptions
  | ResolvedOwnStoreOptions;

/** Per-acquisition options after validation. */
export type ResolvedAcquireOptions = Pick<
  ResolvedLockOptions,
  'ttl' | 'waitTimeout' | 'watchdog'
> & {
  holdFor?: number;
  signal?: AbortSignal;
  limit?: number;
  permits?: number;
  mode?: 'read' | 'write';
  label?: string;
};
