import { MAX_KEY_LENGTH } from '../lock.constants.js';
import { LockKeyResolutionError } from '../lock.errors.js';
import { hashTag, slotOf, slotTag } from './cluster-slots.js';

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
 *   {K}:holders   {T}:holders:K    a semaphore's or read-write lock's holders (zset: token by
 *                                  expiry), and its own queue of waiters and their leases …
 *   {K}:line      {T}:line:K       … (zset and hash, as the mutex's): all three deleted with
 *   {K}:places    {T}:places:K     the last holder or waiter
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

/** Half of a UTF-16 surrogate pair without its other half (matched by code point). */
export const LONE_SURROGATE = /\p{Cs}/u;

function checkedKey(what: string, prefix: string, key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyResolutionError(`A ${what} must be a string, got ${typeof key}`);
  }
  if (key.length === 0) throw new LockKeyResolutionError(`A ${what} must not be empty`);
  if (LONE_SURROGATE.test(key)) {
    throw new LockKeyResolutionError(
      `A ${what} must be well-formed Unicode; ${JSON.stringify(key.slice(0, 80))} has a lone ` +
        'surrogate, which Redis and ZooKeeper would store as U+FFFD, making it one key with others',
    );
  }
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
export type SideKeyRole = 'queue' | 'waiters' | 'fenced' | 'holders' | 'line' | 'places';

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

/** The keys of the acquire and release scripts, in the order they expect them. */
export type ScriptKeys = [lock: string, fence: string, queue: string, waiters: string];

/** The lock key followed by the keys beside it, in the order the scripts expect them. */
export function scriptKeysOf(redisKey: string, perSlot: boolean): ScriptKeys {
  return [
    redisKey,
    fenceKeyOf(redisKey, perSlot),
    sideKeyOf(redisKey, 'queue'),
    sideKeyOf(redisKey, 'waiters'),
  ];
}

/**
 * The keys of the semaphore and read-write scripts: the lock key (which holds the kind's marker
 * while anybody holds a permit), the fencing counter, the queue of waiters and their leases
 * (laid out as the mutex's, in keys of their own), the holders, and the mutex's queue.
 */
export type SharedScriptKeys = [
  lock: string,
  fence: string,
  line: string,
  places: string,
  holders: string,
  mutexQueue: string,
];

/** The lock key followed by the keys the semaphore and read-write scripts keep beside it. */
export function sharedScriptKeysOf(redisKey: string, perSlot: boolean): SharedScriptKeys {
  return [
    redisKey,
    fenceKeyOf(redisKey, perSlot),
    sideKeyOf(redisKey, 'line'),
    sideKeyOf(redisKey, 'places'),
    sideKeyOf(redisKey, 'holders'),
    sideKeyOf(redisKey, 'queue'),
  ];
}
