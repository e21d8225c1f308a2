import { MAX_KEY_LENGTH } from '../lock.constants.js';
import { LockKeyResolutionError } from '../lock.errors.js';
import { hashTag } from './hash-tag.js';

/*
 * The key grammar. Every key the library touches lies in one of four namespaces, told apart
 * by how the key begins, so that no name a caller gives can reach into another:
 *
 *   lock keys     P + name         P: the keyPrefix, not empty and without braces (checked at
 *                                  boot), so a lock key never begins with "{"
 *   leaderships   P + "{}leader:" + N   the lock of leader election N: a caller can name none
 *                                  of them, as "{}" is no hash tag and a name with a "}"
 *                                  that closes no tag is refused (below)
 *   library keys  "{" ...          a caller can name none of them (below)
 *   data keys     anything else    the resources of writeFenced: begin neither with "{" nor P
 *
 * The names are checked here alike for every store, so that a name valid on one backend is
 * valid on all. The library keys that the Redis stores keep beside a lock key, and the guard
 * beside a data key, are laid out in src/store/redis/redis-keys.ts.
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
