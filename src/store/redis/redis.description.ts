import type { RedisServerConfig, ResolvedRedis } from '../../options/lock-options.interface.js';
import { startupNodesOf } from './ioredis/ioredis.connections.js';
import { serverOptionsOf } from './redis-clients.js';
import { addressOf } from './redis.options.js';

type ClusterConfig = Extract<ResolvedRedis, { topology: 'cluster' }>['config'];
type ClusterNode = NonNullable<ReturnType<typeof startupNodesOf>>[number];

/**
 * Where the locks of a Redis topology live, for the line the module logs at boot. Never a
 * credential: URLs are reduced to host and port, and of options only hosts, ports and names
 * are read.
 * @param prefix how the line names the key prefix, e.g. `prefix "lock:"`
 */
export function describeRedis(redis: ResolvedRedis, prefix: string): string {
  switch (redis.topology) {
    case 'single':
      return `Locks on ${serverOf(redis.config)} (${prefix})`;
    case 'cluster':
      return `Locks on a Redis Cluster with seed nodes ${seedsOf(redis.config)} (${prefix})`;
    case 'redlock':
      return (
        `Locks on RedLock over ${redis.nodes.length} Redis masters: ` +
        `${redis.nodes.map(addressOf).join(', ')} (${prefix})`
      );
  }
}

/** A Redis topology as metrics and spans name it (`lock.backend`). */
export function redisBackendOf(
  redis: ResolvedRedis,
): 'redis' | 'redis-sentinel' | 'redis-cluster' | 'redlock' {
  switch (redis.topology) {
    case 'single':
      return serverOptionsOf(redis.config).sentinels?.length ? 'redis-sentinel' : 'redis';
    case 'cluster':
      return 'redis-cluster';
    case 'redlock':
      return 'redlock';
  }
}

/** One server, or a Sentinel-managed master with all its sentinels, and its database. */
function serverOf(config: RedisServerConfig): string {
  const options = serverOptionsOf(config);
  const db =
    typeof config === 'string' ? Number(new URL(config).pathname.slice(1) || 0) : (options.db ?? 0);
  const inDb = db === 0 ? '' : ` db ${db}`;
  if (options.sentinels?.length) {
    const sentinels = options.sentinels
      .map(({ host, port }) => `${host ?? '127.0.0.1'}:${port ?? 26379}`)
      .join(',');
    return `Redis master ${JSON.stringify(options.name)}${inDb} via sentinels ${sentinels}`;
  }
  return `Redis at ${addressOf(config)}${inDb}`;
}

function seedsOf(config: ClusterConfig): string {
  const nodes = startupNodesOf(config);
  if (!nodes?.length) return '(those of the Cluster client given)';
  return nodes.map(nodeAddress).join(',');
}

/** A Cluster startup node as ioredis takes it: a port, `host:port`, a URL, or options. */
function nodeAddress(node: ClusterNode): string {
  if (typeof node === 'number') return `127.0.0.1:${node}`;
  if (typeof node === 'string') {
    if (node.includes('://')) return addressOf(node);
    return /^\d+$/.test(node) ? `127.0.0.1:${node}` : withoutUserInfo(node);
  }
  return `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}`;
}

/** Each `host:port` of a list without anything before an `@` (where a password would be). */
function withoutUserInfo(hosts: string): string {
  return hosts
    .split(',')
    .map((host) => host.slice(host.lastIndexOf('@') + 1))
    .join(',');
}
