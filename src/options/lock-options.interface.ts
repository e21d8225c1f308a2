import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';

/** One Redis server: a `redis://` / `rediss://` URL, ioredis options, or an ioredis client. */
export type RedisServerConfig = string | RedisOptions | Redis;

/** A Redis Cluster for the module to connect to: its startup nodes and ioredis options. */
export interface RedisClusterConfig {
  cluster: ClusterNode[];
  clusterOptions?: ClusterOptions;
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
  /** Prepended to every key. Default `'lock:'`. Must not contain `{` or `}`. */
  keyPrefix?: string;
  /** Lock time-to-live in ms. Default 30 000. */
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
}

/** Where the locks live, once validated. */
export type ResolvedRedis =
  | { topology: 'single'; config: RedisServerConfig }
  | { topology: 'cluster'; config: Cluster | RedisClusterConfig }
  | { topology: 'redlock'; nodes: RedisServerConfig[] };

/** Module options after validation, with every default filled in. */
export interface ResolvedLockOptions {
  store: 'redis' | 'memory';
  fair: boolean;
  redis: ResolvedRedis;
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
};
