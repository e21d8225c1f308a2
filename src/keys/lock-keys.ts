import { MAX_KEY_LENGTH } from '../lock.constants.js';
import { LockKeyResolutionError } from '../lock.errors.js';
import { hashTag, slotOf, slotTag } from './cluster-slots.js';

/*
 * The key grammar. Every Redis key the library touches lies in one of three namespaces, told
 * apart by how the key begins, so that no name a caller gives can reach into another:
 *
 *   lock keys     P + name         P: the keyPrefix, not empty and without braces (checked at
 *                                  boot), so a lock key never begins with "{"
 *   leaderships   P + "{}leader:" + N   the lock of leader election N: a caller can name none
 *                                  of them, as "{}" is no hash tag and a name with a "}"
 *                                  that closes no tag is refused (below)
 *   library keys  "{" ...          a caller can name none of them (below)
 *   data keys     anything else    the resources of writeFenced: begin neither with "{" nor P
 *
 * The library's keys of locks all begin with "{" + P, so that a Redis ACL user confined to
 * `~P* ~{P*` runs every feature; each lies in the Redis Cluster hash slot of the key it serves:
 *
 *   {K}:queue     {H+s}:queue:K    the queue of waiters of lock key K (zset) …
 *   {K}:waiters   {H+s}:waiters:K  … and their leases (hash); both deleted with the last waiter
 *   {K}:holders   {H+s}:holders:K  a semaphore's or read-write lock's holders (zset: token by
 *                                  expiry), their fencing tokens (hash), and its own queue of
 *   {K}:tenures   {H+s}:tenures:K  waiters and their leases (zset and hash, as the mutex's):
 *   {K}:line      {H+s}:line:K     all four deleted with the last holder or waiter
 *   {K}:places    {H+s}:places:K
 *   {P}:fence     {P+s}:fence      the fencing counter of the prefix: one per server, or one
 *                                  per hash slot on a Cluster
 *
 * The first form is for a key without braces that close, the second for a key with a hash tag
 * or with a "}" that closes none (a leadership's): H is the key up to its first brace (which
 * begins with P), and s three characters that bring the tag into the key's slot (see slotTag). The guard of data key R lies in R's
 * slot, outside the prefix (an ACL for writeFenced names it beside R): {R}:fenced, or
 * {T}:fenced:R when R's hash tag is T.
 *
 * A key with a "}" that closes no tag is refused, and neither P nor s holds a brace, so the
 * first "}" ends the tag and the role follows it: keys of different roles, or of different K
 * or R, are different, and so are the counters of different prefixes.
 */

/**
 * A lock as its caller names it (`name`) and as the store knows it (`key`, the prefix and the
 * name): made once, where a call comes in, and carried from there.
 */
export interface LockId {
  readonly name: string;
  readonly key: string;
  /** What metrics and spans call the lock when no `label` is given: a `@WithLock` template. */
  readonly label?: string;
}

/**
 * Checks a caller's lock name and returns the lock's {@link LockId}.
 * @throws LockKeyResolutionError as {@link toStoreKey}
 */
export function lockIdOf(prefix: string, name: unknown, label?: string): LockId {
  const key = toStoreKey(prefix, name);
  return { name: name as string, key, label };
}

/**
 * Checks the names of a lock on several keys and returns their {@link LockId}s, each once, in
 * the order of their keys: the order in which every caller takes them, so that two callers
 * asking for the same keys cannot each hold one and wait for the other. Each key is a lock of
 * its own, so keys in different Redis Cluster hash slots are fine.
 * @throws LockKeyResolutionError for an empty list, or as {@link toStoreKey} for a name in it
 */
export function lockIdsOf(prefix: string, names: readonly unknown[]): LockId[] {
  if (names.length === 0) throw new LockKeyResolutionError('The list of lock keys is empty');
  return inKeyOrder(names.map((name) => lockIdOf(prefix, name)));
}

/** `ids` without duplicate keys, in the order of their keys (see {@link lockIdsOf}). */
export function inKeyOrder(ids: readonly LockId[]): LockId[] {
  if (ids.length === 1) return [...ids];
  const unique = [...new Map(ids.map((id) => [id.key, id])).values()];
  return unique.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Checks a caller's lock name and returns its key in the store (`keyPrefix + name`).
 * @throws LockKeyResolutionError for a non-string, empty or over-long name, or one whose braces
 *   would keep its queue keys out of its Redis Cluster hash slot
 */
export function toStoreKey(prefix: string, key: unknown): string {
  return checkedKey('lock key', prefix, key);
}

/**
 * Checks a resource given to `writeFenced` and returns its key in the store (the resource
 * itself): a data key, which may not begin with `{` (the library's keys) nor with the lock prefix.
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

/** How a leadership's lock key begins after the prefix: a name no caller can give a lock. */
export const LEADER_KEY_INFIX = '{}leader:';

/**
 * Checks the name of a leader election and returns the {@link LockId} of its lock, in a
 * namespace of its own under the prefix, which no lock key a caller names can reach (see the
 * grammar above). Its `name`, as errors and `LockLostError` report it, is `leader:<name>`.
 * @throws LockKeyResolutionError for a non-string, empty, over-long or ill-formed name
 */
export function leaderIdOf(prefix: string, name: unknown): LockId {
  checkedKey('leader name', '', name);
  return { name: `leader:${name as string}`, key: `${prefix}${LEADER_KEY_INFIX}${name as string}` };
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

/**
 * The name by which the caller knows a key of the store, as errors report it: a lock key without
 * the prefix; a fenced resource (which never begins with the prefix) as it is.
 */
export function lockNameOf(prefix: string, key: string): string {
  return key.startsWith(prefix) ? key.slice(prefix.length) : key;
}

/** What the library keeps beside a lock key. */
export type SideKeyRole = 'queue' | 'waiters' | 'holders' | 'tenures' | 'line' | 'places';

/**
 * A key that the library keeps beside a lock key, in the same Redis Cluster hash slot and under
 * `{` + the key prefix: the whole key is its tag when the key has no brace that closes, and
 * otherwise a tag made of the key's text before its first brace, brought into the key's slot.
 */
export function sideKeyOf(redisKey: string, role: SideKeyRole): string {
  if (hashTag(redisKey) === undefined && !redisKey.includes('}')) return `{${redisKey}}:${role}`;
  const head = redisKey.slice(0, redisKey.search(/[{}]/));
  return `{${slotTag(slotOf(redisKey), head)}}:${role}:${redisKey}`;
}

/**
 * The guard of a `writeFenced` resource: beside the data key, in its Redis Cluster hash slot,
 * carrying the data key's own hash tag, or the whole key as its tag when it has none.
 */
export function guardKeyOf(dataKey: string): string {
  const tag = hashTag(dataKey);
  return tag === undefined ? `{${dataKey}}:fenced` : `{${tag}}:fenced:${dataKey}`;
}

/**
 * The fencing counter that issues the tokens of a lock key: the counter of its key prefix and
 * hash slot on a Cluster (a script may only touch keys of one slot), and of its prefix alone
 * elsewhere. Either way there are at most as many counters per prefix as slots, however many
 * keys are locked, and apps with different prefixes share none.
 */
export function fenceKeyOf(redisKey: string, prefix: string, perSlot: boolean): string {
  return `{${perSlot ? slotTag(slotOf(redisKey), prefix) : prefix}}:fence`;
}

/** The keys of the acquire and release scripts, in the order they expect them. */
export type ScriptKeys = [lock: string, fence: string, queue: string, waiters: string];

/** The lock key followed by the keys beside it, in the order the scripts expect them. */
export function scriptKeysOf(redisKey: string, prefix: string, perSlot: boolean): ScriptKeys {
  return [
    redisKey,
    fenceKeyOf(redisKey, prefix, perSlot),
    sideKeyOf(redisKey, 'queue'),
    sideKeyOf(redisKey, 'waiters'),
  ];
}

/**
 * The keys of the semaphore and read-write scripts: the lock key (which holds the kind's marker
 * while anybody holds a permit), the fencing counter, the queue of waiters and their leases
 * (laid out as the mutex's, in keys of their own), the holders, the mutex's queue, and the
 * holders' fencing tokens.
 */
export type SharedScriptKeys = [
  lock: string,
  fence: string,
  line: string,
  places: string,
  holders: string,
  mutexQueue: string,
  tenures: string,
];

/** The lock key followed by the keys the semaphore and read-write scripts keep beside it. */
export function sharedScriptKeysOf(
  redisKey: string,
  prefix: string,
  perSlot: boolean,
): SharedScriptKeys {
  return [
    redisKey,
    fenceKeyOf(redisKey, prefix, perSlot),
    sideKeyOf(redisKey, 'line'),
    sideKeyOf(redisKey, 'places'),
    sideKeyOf(redisKey, 'holders'),
    sideKeyOf(redisKey, 'queue'),
    sideKeyOf(redisKey, 'tenures'),
  ];
}
