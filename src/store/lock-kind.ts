import { LockKindError, LockOptionsError } from '../lock.errors.js';

/**
 * The kinds of lock, and how a token names its kind. A mutex's token is 32 hex characters; the
 * token of a semaphore permit or of a read-write lock's holder begins with a tag naming the kind
 * (`s<limit>.`, `r.`, `w.`), so that every store operation given a token (an attempt, a release,
 * a renewal, the clean-up of a late reply) knows which scripts it belongs to, and the store's
 * queue tells each waiter's kind by its token alone.
 */

/** What a caller holds: the whole key, one of `limit` permits, or a read or write share. */
export type LockKind =
  { type: 'mutex' } | { type: 'semaphore'; limit: number } | { type: 'read' } | { type: 'write' };

/** The kind that the options `limit` and `mode` ask for; `limit: 1` is the mutex. */
export function kindOf(options: { limit?: number; mode?: 'read' | 'write' }): LockKind {
  if (options.mode !== undefined) return { type: options.mode };
  if (options.limit !== undefined && options.limit > 1) {
    return { type: 'semaphore', limit: options.limit };
  }
  return { type: 'mutex' };
}

/** What begins the tokens of `kind`: '' for a mutex. */
export function tagOf(kind: LockKind): string {
  switch (kind.type) {
    case 'mutex':
      return '';
    case 'semaphore':
      return `s${kind.limit}.`;
    case 'read':
      return 'r.';
    case 'write':
      return 'w.';
  }
}

const TAGGED = /^(?:s(\d+)|([rw]))\./;

/** The kind a token was made for (see {@link tagOf}). */
export function kindOfToken(token: string): LockKind {
  const match = TAGGED.exec(token);
  if (!match) return { type: 'mutex' };
  if (match[1] !== undefined) return { type: 'semaphore', limit: Number(match[1]) };
  return { type: match[2] === 'r' ? 'read' : 'write' };
}

/** Whether a token is a semaphore permit's or a read-write holder's (not a mutex's). */
export function isShared(token: string): boolean {
  return TAGGED.test(token);
}

/** The kind in words, for error messages. */
export function describeKind(kind: LockKind): string {
  switch (kind.type) {
    case 'mutex':
      return 'a mutex';
    case 'semaphore':
      return `a semaphore of limit ${kind.limit}`;
    case 'read':
    case 'write':
      return `a read-write lock (${kind.type})`;
  }
}

/** What the lock key holds while a semaphore's or read-write lock's permits are held. */
export function markerOf(kind: LockKind): string {
  return kind.type === 'semaphore' ? `#s${kind.limit}` : '#rw';
}

/**
 * The error of a caller that found `key` held as another kind: `heldAs` is what the lock key
 * holds, a kind's marker ({@link markerOf}) or a mutex holder's token.
 */
export function kindConflict(key: string, token: string, heldAs: string): LockKindError {
  const limit = /^#s(\d+)$/.exec(heldAs)?.[1];
  const held =
    limit !== undefined
      ? `a semaphore of limit ${limit}`
      : heldAs === '#rw'
        ? 'a read-write lock'
        : 'a mutex';
  return new LockKindError(key, held, describeKind(kindOfToken(token)));
}

/**
 * Whether work nested in work that holds `held` on a key may reuse it for `asked` (reentrancy):
 * an exclusive hold (mutex, write) covers any kind, a shared one only its own kind. Anything
 * else is an upgrade (a write inside a read, a mutex inside a permit), which would wait for the
 * surrounding work, itself.
 */
export function covers(held: LockKind, asked: LockKind): boolean {
  if (held.type === 'mutex' || held.type === 'write') return true;
  return describeKind(held) === describeKind(asked);
}

/**
 * The error of a semaphore or read-write lock asked of RedLock, which has neither: permits
 * counted on independent masters do not add up to a limit (each master may count a different
 * majority of holders, so up to about N/⌊N/2+1⌋ × limit callers could hold at once), and the
 * masters keep no common queue to serve waiters in order.
 */
export function notOnRedlock(kind: LockKind, where?: string): LockOptionsError {
  return new LockOptionsError(
    kind.type === 'semaphore' ? 'limit' : 'mode',
    kind.type === 'semaphore' ? kind.limit : kind.type,
    'none on RedLock (several masters): semaphores and read-write locks need one Redis, ' +
      'Sentinel or Cluster, or the memory store',
    where,
  );
}
