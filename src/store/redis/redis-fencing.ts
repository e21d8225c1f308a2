import type { RedisClientPort } from './redis-client.port.js';
import { fenceKeyOf } from './redis-keys.js';
import type { FencedWriteOutcome } from '../lock-store.interface.js';
import { CLAIM_SCRIPT } from './scripts/claim.script.js';
import { FENCED_WRITE_SCRIPT } from './scripts/fenced-write.script.js';

/**
 * Takes the lock on `key` for `token` if it is free, and raises the key's fencing counter to
 * at least `fencingToken` (with no token, only raises it): how RedLock puts a lock back on a
 * master that lacked it, and makes every master issue greater tokens than its majority did.
 * @param cluster whether `client` is a Cluster client: then the counters are per hash slot
 */
export function claimOn(
  client: RedisClientPort,
  keyPrefix: string,
  cluster: boolean,
  {
    key,
    token,
    ttl,
    fencingToken,
  }: { key: string; token: string; ttl: number; fencingToken: number },
): Promise<boolean> {
  return CLAIM_SCRIPT.run(
    client,
    [key, fenceKeyOf(key, keyPrefix, cluster)],
    [fencingToken, token, ttl],
  );
}

/**
 * Sets `resource` to `value` (for `ttl` ms, 0 for ever) unless a write to it already presented
 * a greater fencing token, as recorded in `guard`.
 */
export function writeFencedOn(
  client: RedisClientPort,
  { resource, guard, value, fencingToken, ttl }: FencedWrite,
): Promise<FencedWriteOutcome> {
  return FENCED_WRITE_SCRIPT.run(client, [resource, guard], [fencingToken, value, ttl]);
}

/** One write of {@link writeFencedOn}. */
export interface FencedWrite {
  resource: string;
  guard: string;
  value: string;
  fencingToken: number;
  ttl: number;
}
