import type { ResolvedLockOptions } from '../options/lock-options.interface.js';
import { addressOfPostgres } from './postgres/postgres.options.js';
import { describeRedis, redisBackendOf } from './redis/redis.description.js';

/** The backends as metrics and spans name them (`lock.backend`). */
export type BackendName =
  | 'redis'
  | 'redis-cluster'
  | 'redis-sentinel'
  | 'redlock'
  | 'zookeeper'
  | 'postgres'
  | 'memory'
  | 'own';

/**
 * The line the module logs at boot: which backend holds the locks and where it is, so that an
 * operator reading the log of an instance sees where its locks live. Never a credential: URLs
 * are reduced to host and port, and of options only hosts, ports and names are read.
 *
 * @example
 * `Locks on Redis at 10.0.0.5:6379 (prefix "lock:")`
 * `Locks on ZooKeeper at zk1:2181,zk2:2181 (root /locks, prefix "lock:")`
 */
export function describeStore(options: ResolvedLockOptions): string {
  const prefix = `prefix ${JSON.stringify(options.keyPrefix)}`;
  if (options.store === 'memory') return 'Locks in memory, in this process only';
  if (options.store === 'own') {
    return `Locks on a store of the app's own, ${options.own.capabilities.backend} (${prefix})`;
  }
  if (options.store === 'zookeeper') {
    const { connectionString, root } = options.zookeeper;
    return `Locks on ZooKeeper at ${withoutUserInfo(connectionString)} (root ${root}, ${prefix})`;
  }
  if (options.store === 'postgres') {
    const { postgres } = options;
    const table = `table ${postgres.schema}.${postgres.table}`;
    return `Locks on PostgreSQL at ${addressOfPostgres(postgres)} (${table}, ${prefix})`;
  }
  return describeRedis(options.redis, prefix);
}

/** The backend that holds the locks, as metrics and spans name it (`lock.backend`). */
export function backendOf(options: ResolvedLockOptions): BackendName {
  switch (options.store) {
    case 'own':
      return 'own';
    case 'memory':
      return 'memory';
    case 'zookeeper':
      return 'zookeeper';
    case 'postgres':
      return 'postgres';
    case 'redis':
      return redisBackendOf(options.redis);
  }
}

/** Each `host:port` of a list without anything before an `@` (where a password would be). */
function withoutUserInfo(hosts: string): string {
  return hosts
    .split(',')
    .map((host) => host.slice(host.lastIndexOf('@') + 1))
    .join(',');
}
