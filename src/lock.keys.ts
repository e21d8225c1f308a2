import { MAX_KEY_LENGTH } from './lock.constants.js';
import { LockKeyResolutionError } from './lock.errors.js';

/*
 * The key grammar. Every Redis key the library touches lies in one of three namespaces, told
 * apart by how the key begins, so that no name a caller gives can reach into another:
 *
 *   lock keys     P + name         P: the keyPrefix, not empty and without braces (checked at
 *                                  boot), so a lock key never begins with "{"
 *   library keys  "{" ...          a caller can name none of them (below)
 *   data keys     anything else    the resources of writeFenced: begin neither with "{" nor P
 *
 * The library's keys, each in the Redis Cluster hash slot of the key it serves:
 *
 *   {K}:queue     {T}:queue:K      the queue of waiters of lock key K (zset) …
 *   {K}:waiters   {T}:waiters:K    … and their leases (hash); both deleted with the last waiter
 *   {R}:fenced    {T}:fenced:R     the guard of data key R
 *   {S}:fence                      a fencing counter: one per hash slot on a Cluster (S: the
 *                                  slot's tag, see slotTag), one per server elsewhere (S empty)
 *
 * The first form is for a key without a hash tag, the second for a key whose tag is T. A key
 * with a "}" that closes no tag is refused, so the first "}" ends the tag and the role follows
 * it: keys of different roles, or of different K or R, are different.
 */

/**
 * Checks a caller's lock name and returns its Redis key (`keyPrefix + name`).
 * @throws LockKeyResolutionError for a non-string, empty or over-long name, or one whose braces
 *   would keep its queue keys out of its Redis Cluster hash slot
 */
export function toRedisKey(prefix: string, key: unknown): string {
  return checkedKey('lock key', prefix, key);
}

/**
 * Checks a resource given to `writeFenced` and returns its Redis key (the resource itself): a
 * data key, which may not begin with `{` (the library's keys) nor with the lock prefix.
 * @throws LockKeyResolutionError for anything else
 */
export function toDataKey(lockPrefix: string, resource: unknown): string {
  const key = checkedKey('fenced resource', '', resource);
  if (key.startsWith('{') || key.startsWith(lockPrefix)) {
    throw new LockKeyResolutionError(
      `Fenced resource ${JSON.stringify(key.slice(0, 80))} begins with ` +
        `${key.startsWith('{') ? '"{", like the keys the library keeps' : `the lock prefix "${lockPrefix}"`}; ` +
        'keep data in keys that begin with neither (a hash tag may come later: "account:{42}")',
    );
  }
  return key;
}

function checkedKey(what: string, prefix: string, key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyResolutionError(`A ${what} must be a string, got ${typeof key}`);
  }
  if (key.length === 0) throw new LockKeyResolutionError(`A ${what} must not be empty`);
  if (key.length > MAX_KEY_LENGTH) {
    throw new LockKeyResolutionError(
      `A ${what} must be at most ${MAX_KEY_LENGTH} characters, got ${key.length}`,
    );
  }
  const redisKey = prefix + key;
  if (hashTag(redisKey) === undefined && redisKey.includes('}')) {
    throw new LockKeyResolutionError(
      `${what[0].toUpperCase()}${what.slice(1)} ${JSON.stringify(key.slice(0, 80))} has a "}" ` +
        'that closes no "{…}" hash tag; such a key cannot share a Redis Cluster slot with the ' +
        'keys kept beside it',
    );
  }
  return redisKey;
}

/** What the library keeps beside a lock key (its waiters) or a data key (its guard). */
export type SideKeyRole = 'queue' | 'waiters' | 'fenced';

/**
 * A key that the library keeps beside a lock or data key, in the same Redis Cluster hash slot:
 * it carries that key's own hash tag, or the whole key as its tag when the key has none.
 */
export function sideKeyOf(redisKey: string, role: SideKeyRole): string {
  const tag = hashTag(redisKey);
  return tag === undefined ? `{${redisKey}}:${role}` : `{${tag}}:${role}:${redisKey}`;
}

/**
 * The fencing counter that issues the tokens of a lock key: the counter of its hash slot on a
 * Cluster (a script may only touch keys of one slot), and the server's single counter
 * elsewhere. Either way there are at most as many counters as slots, however many keys are
 * locked.
 */
export function fenceKeyOf(redisKey: string, perSlot: boolean): string {
  return `{${perSlot ? slotTag(slotOf(redisKey)) : ''}}:fence`;
}

/** The lock key followed by the keys beside it, in the order the scripts expect them. */
export function scriptKeysOf(redisKey: string, perSlot: boolean): string[] {
  return [
    redisKey,
    fenceKeyOf(redisKey, perSlot),
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
export const CLUSTER_SLOTS = 16_384;

/** CRC16 (XMODEM) of some bytes, as Redis Cluster hashes keys. */
function crc16(bytes: Iterable<number>): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/**
 * The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key
 * when it has none, modulo 16384.
 */
export function slotOf(key: string): number {
  return crc16(Buffer.from(hashTag(key) ?? key)) % CLUSTER_SLOTS;
}

/** Characters of the slot tags: three of them name every slot. */
const TAG_CHARACTERS = Buffer.from(
  '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ',
);
/** The tags of all slots, three characters each, in slot order; built on first use. */
let slotTags: string | undefined;

/** A three-character string that hashes to `slot`: the tag of the slot's fencing counter. */
export function slotTag(slot: number): string {
  slotTags ??= findSlotTags();
  return slotTags.slice(3 * slot, 3 * slot + 3);
}

/**
 * The first tag found for each slot, among the strings of three TAG_CHARACTERS (there are
 * 14 times as many as slots). A CRC16 that starts from zero is linear (the CRC of `a XOR b` is
 * the CRC of `a` XOR the CRC of `b`), so the CRC of `xyz` is that of `x\0\0` XOR that of `y\0`
 * XOR that of `z`, each looked up: a few milliseconds, once.
 */
function findSlotTags(): string {
  const crcs = (padding: number[]) => [...TAG_CHARACTERS].map((c) => crc16([c, ...padding]));
  const [first, second, third] = [crcs([0, 0]), crcs([0]), crcs([])];
  const tags = Buffer.alloc(3 * CLUSTER_SLOTS);
  const [size, x] = [TAG_CHARACTERS.length, TAG_CHARACTERS];
  let missing = CLUSTER_SLOTS;
  for (let i = 0; i < size && missing > 0; i++) {
    for (let j = 0; j < size; j++) {
      for (let k = 0; k < size; k++) {
        const at = 3 * ((first[i] ^ second[j] ^ third[k]) % CLUSTER_SLOTS);
        if (tags[at] === 0) {
          tags.set([x[i], x[j], x[k]], at);
          missing--;
        }
      }
    }
  }
  return tags.toString('latin1');
}
