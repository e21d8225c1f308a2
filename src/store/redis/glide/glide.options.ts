import { LockOptionsError } from '../../../lock.errors.js';
import { isRecord } from '../../../options/option-checks.js';
import { GLIDE_SERVER_OPTIONS } from './glide.connections.js';

/** What a Cluster node's options may hold with GLIDE: who connects, and how. */
const GLIDE_NODE_OPTIONS = new Set(['username', 'password', 'tls', 'connectTimeout']);

/**
 * Refuses, naming the first, the options of one server that the module cannot give GLIDE
 * (Sentinel among them: GLIDE does not follow one).
 * @param name where the options were given, e.g. `redis` or `redis[1]`
 */
export function checkGlideServerOptions(name: string, options: Record<string, unknown>): void {
  refuseUnknown(name, options, GLIDE_SERVER_OPTIONS);
}

/** Refuses the Cluster options that the module cannot give GLIDE. */
export function checkGlideClusterOptions(clusterOptions: Record<string, unknown>): void {
  const { redisOptions, ...rest } = clusterOptions;
  refuseUnknown('redis.clusterOptions', rest, new Set());
  if (redisOptions === undefined) return;
  if (!isRecord(redisOptions)) {
    throw new LockOptionsError('redis.clusterOptions.redisOptions', redisOptions, 'an object');
  }
  refuseUnknown('redis.clusterOptions.redisOptions', redisOptions, GLIDE_NODE_OPTIONS);
}

function refuseUnknown(
  name: string,
  options: Record<string, unknown>,
  known: ReadonlySet<string>,
): void {
  const unknown = Object.keys(options).find((option) => !known.has(option));
  if (unknown === undefined) return;
  throw new LockOptionsError(
    `${name}.${unknown}`,
    // Not the value: it may be a credential.
    unknown,
    known.size === 0
      ? `nothing here with redisClient 'glide'`
      : `an option that redisClient 'glide' takes (${[...known].join(', ')}); ` +
          'pass a GLIDE client of your own for the others',
  );
}
