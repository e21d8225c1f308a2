import { MAX_KEY_LENGTH } from './lock.constants.js';
import { LockKeyResolutionError } from './lock.errors.js';

/**
 * Checks a caller's key and returns the Redis key (`keyPrefix + key`).
 * @throws LockKeyResolutionError for a non-string, empty or over-long key, or one whose braces
 *   would keep its fencing counter out of its Redis Cluster hash slot
 */
export function toRedisKey(prefix: string, key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyResolutionError(`A lock key must be a string, got ${typeof key}`);
  }
  if (key.length === 0) throw new LockKeyResolutionError('A lock key must not be empty');
  if (key.length > MAX_KEY_LENGTH) {
    throw new LockKeyResolutionError(
      `A lock key must be at most ${MAX_KEY_LENGTH} characters, got ${key.length}`,
    );
  }
  const redisKey = prefix + key;
  if (hashTag(redisKey) === undefined && redisKey.includes('}')) {
    throw new LockKeyResolutionError(
      `Lock key ${JSON.stringify(key.slice(0, 80))} has a "}" that closes no "{…}" hash tag; ` +
        'such a key cannot share a Redis Cluster slot with its fencing counter',
    );
  }
  return redisKey;
}

/** What the library keeps beside a lock: its fencing counter and its queue of waiters. */
export type SideKeyRole = 'fence' | 'queue' | 'waiters' | 'fenced';

/**
 * A key that the library keeps beside a lock key, in the same Redis Cluster hash slot: it
 * carries the lock key's own hash tag, or the whole lock key as its tag when the lock key has
 * none. These keys start with `{`, lock keys with the (brace-free) prefix, so they cannot
 * collide.
 */
export function sideKeyOf(redisKey: string, role: SideKeyRole): string {
  const tag = hashTag(redisKey);
  return tag === undefined ? `{${redisKey}}:${role}` : `{${tag}}:${role}:${redisKey}`;
}

/** The lock key followed by its side keys, in the order the scripts expect them. */
export function scriptKeysOf(redisKey: string): string[] {
  return [
    redisKey,
    sideKeyOf(redisKey, 'fence'),
    sideKeyOf(redisKey, 'queue'),
    sideKeyOf(redisKey, 'waiters'),
  ];
}

/** The hash tag Redis Cluster would hash for this key, if it has one. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** Number of hash slots in a Redis Cluster. */
const CLUSTER_SLOTS = 16_384;

/**
 * The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key
 * when it has none, modulo 16384.
 */
export function slotOf(key: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashTag(key) ?? key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc % CLUSTER_SLOTS;
}
