import { hashTag } from '../../keys/hash-tag.js';
import { slotOf, slotTag } from './cluster-slots.js';

/*
 * The keys the Redis stores keep beside a lock key (the namespaces every key lies in, and the
 * checks that keep a caller's names out of the library's, are in src/keys/lock-keys.ts). The
 * library's keys of locks all begin with "{" + P, P being the keyPrefix, so that a Redis ACL
 * user confined to `~P* ~{P*` runs every feature; each lies in the Redis Cluster hash slot of
 * the key it serves:
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
 *   {K}:turn@I    {H+s}:turn:K@I   a channel, not a key: where the turns of K's waiters whose
 *                                  tokens end with owner mark @I (see ownerMark) are announced
 *
 * The first form is for a key without braces that close, the second for a key with a hash tag
 * or with a "}" that closes none (a leadership's): H is the key up to its first brace (which
 * begins with P), and s three characters that bring the tag into the key's slot (see slotTag).
 *
 * A key with a "}" that closes no tag is refused (lock-keys.ts), and neither P nor s holds a
 * brace, so the first "}" ends the tag and the role follows it: keys of different roles, or of
 * different K, are different, and so are the counters of different prefixes.
 *
 * Channels: a lock's own channel is its key K, on which its releases are announced, and the
 * turns of waiters whose tokens carry no owner mark. A turn channel lies in K's slot, so that a
 * script may announce on it with SPUBLISH, and under "{" + P, so that an ACL user confined to
 * `&P* &{P*` hears every one. Its owner mark holds no brace and no "@" after its first (it is
 * escaped), so a turn channel's last "@" begins the mark, and turn channels of different K or
 * of different instances differ; as no lock key begins with "{", none is a lock's channel.
 */

/** What the library keeps beside a lock key. */
export type SideKeyRole = 'queue' | 'waiters' | 'holders' | 'tenures' | 'line' | 'places';

/**
 * A key that the library keeps beside a lock key, in the same Redis Cluster hash slot and under
 * `{` + the key prefix: the whole key is its tag when the key has no brace that closes, and
 * otherwise a tag made of the key's text before its first brace, brought into the key's slot.
 */
export function sideKeyOf(redisKey: string, role: SideKeyRole): string {
  return besideKey(redisKey, role);
}

/**
 * What the names of `redisKey`'s turn channels begin with: the scripts take it as an argument
 * and append the owner mark of the waiter whose turn they announce (see {@link turnChannelOf}).
 */
export function turnChannelsOf(redisKey: string): string {
  return besideKey(redisKey, 'turn');
}

/**
 * The channel on which the turns of `redisKey`'s waiters whose tokens end with `instance` (an
 * owner mark, `@` and the escaped instance id) are announced, in the key's hash slot.
 */
export function turnChannelOf(redisKey: string, instance: string): string {
  return turnChannelsOf(redisKey) + instance;
}

/** A name beside `redisKey`, in its hash slot and under `{` + the key prefix (see above). */
function besideKey(redisKey: string, role: SideKeyRole | 'turn'): string {
  if (hashTag(redisKey) === undefined && !redisKey.includes('}')) return `{${redisKey}}:${role}`;
  const head = redisKey.slice(0, redisKey.search(/[{}]/));
  return `{${slotTag(slotOf(redisKey), head)}}:${role}:${redisKey}`;
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

/**
 * The guard of a `writeFenced` resource: beside the data key, in its Redis Cluster hash slot,
 * carrying the data key's own hash tag, or the whole key as its tag when it has none:
 * `{R}:fenced`, or `{T}:fenced:R` when R's hash tag is T. It lies outside the prefix (an ACL for
 * `writeFenced` names it beside R). A key with a "}" that closes no tag is refused, so the
 * first "}" of a guard ends its tag and the role follows it: the guards of different R differ.
 */
export function guardKeyOf(dataKey: string): string {
  const tag = hashTag(dataKey);
  return tag === undefined ? `{${dataKey}}:fenced` : `{${tag}}:fenced:${dataKey}`;
}
