import { LockOptionsError } from '../../lock.errors.js';
import { isRecord } from '../../options/option-checks.js';
import type { RedisConnectionOptions } from '../../options/redis-connection-options.interface.js';

/**
 * The `redis` options (in ioredis's names) that every client library can be given: where the
 * server is, who connects, and how long a connection may take. ioredis and iovalkey take all
 * of theirs; the other clients (`redisClient: 'node-redis'`, …) these, translated.
 */
const SERVER_OPTIONS = ['host', 'port', 'path', 'username', 'password', 'db', 'tls'] as const;
const SENTINEL_OPTIONS = ['sentinels', 'name', 'sentinelUsername', 'sentinelPassword'] as const;
const MORE_OPTIONS = ['connectTimeout'] as const;
const PORTABLE = new Set<string>([...SERVER_OPTIONS, ...SENTINEL_OPTIONS, ...MORE_OPTIONS]);
/** What a Cluster's `clusterOptions.redisOptions` may hold: who connects, and how. */
const PORTABLE_NODE = new Set<string>(['username', 'password', 'tls', 'connectTimeout']);

/** The options of one server (or a Sentinel-managed master) that any client can be given. */
export type PortableServerOptions = Pick<
  RedisConnectionOptions,
  (typeof SERVER_OPTIONS)[number] | (typeof SENTINEL_OPTIONS)[number] | 'connectTimeout'
>;

/**
 * Refuses the options that the client `kind` would not honour, naming the first one.
 * @param name where the options were given, e.g. `redis` or `redis[1]`
 */
export function checkPortableOptions(
  name: string,
  options: Record<string, unknown>,
  kind: string,
): void {
  refuseUnknown(name, options, PORTABLE, kind);
}

/** Refuses the Cluster options that the client `kind` would not honour. */
export function checkPortableClusterOptions(
  clusterOptions: Record<string, unknown>,
  kind: string,
): void {
  const { redisOptions, ...rest } = clusterOptions;
  refuseUnknown('redis.clusterOptions', rest, new Set(), kind);
  if (redisOptions === undefined) return;
  if (!isRecord(redisOptions)) {
    throw new LockOptionsError('redis.clusterOptions.redisOptions', redisOptions, 'an object');
  }
  refuseUnknown('redis.clusterOptions.redisOptions', redisOptions, PORTABLE_NODE, kind);
}

function refuseUnknown(
  name: string,
  options: Record<string, unknown>,
  known: Set<string>,
  kind: string,
): void {
  const unknown = Object.keys(options).find((option) => !known.has(option));
  if (unknown === undefined) return;
  throw new LockOptionsError(
    `${name}.${unknown}`,
    // Not the value: it may be a credential.
    unknown,
    known.size === 0
      ? `nothing here with redisClient '${kind}'`
      : `an option that redisClient '${kind}' takes (${[...known].join(', ')}); ` +
          `pass a client of your own for the others`,
  );
}
