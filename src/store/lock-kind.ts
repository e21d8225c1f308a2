import { LockKindError } from '../lock.errors.js';

/**
 * The kinds of lock, each a strategy that every store and the engine ask the same questions:
 * how its tokens are tagged, what it is called, which kinds share a key with it, whom it lets
 * hold beside it, and what a waiter of it waits for.
 *
 * A mutex's token is 32 hex characters; the token of a semaphore permit or of a read-write
 * lock's holder begins with a tag naming the kind (`s<limit>.`, or `s<limit>x<permits>.` for a
 * hold of several permits, `r.`, `w.`), so that every store
 * operation given a token (an attempt, a release, a renewal, the clean-up of a late reply) knows
 * which kind it belongs to, and a store's line tells each waiter's kind by its token alone.
 */

/** Where a waiter stands among those ahead of it in its line. */
export type LineStanding =
  /** It may hold now. */
  | { holds: true }
  /** It waits: for the one at index `behind` among those ahead to go, or for any change. */
  | { holds: false; behind?: number };

/** What every kind answers. */
interface KindStrategy {
  /** What begins the kind's tokens: '' for a mutex. */
  readonly tag: string;
  /** Several holders may share the key (semaphore permits, read-write shares). */
  readonly shared: boolean;
  /** The kind in words, for error messages. */
  readonly description: string;
  /** How many of a semaphore's permits a holder of this kind takes (1 for the other kinds). */
  readonly permits: number;
  /**
   * The kinds that may share a key (and a line) with it: the mutex; the readers and writers of
   * a read-write lock (`#rw`); the permits of a semaphore of one limit (`#s<limit>`). For a
   * shared kind, what the lock key holds while its holders hold.
   */
  readonly family: string;
  /**
   * Whether work nested in work that holds this kind on a key may reuse it for `asked`
   * (reentrancy): an exclusive hold covers any kind, a shared one only its own. Anything else is
   * an upgrade (a write inside a read, a mutex inside a permit), which would wait for the
   * surrounding work, itself.
   */
  covers(asked: LockKind): boolean;
  /** Whether a caller of this kind may hold beside holders of the kinds `holders` (its family). */
  admits(holders: readonly LockKind[]): boolean;
  /**
   * Where a waiter of this kind stands behind `ahead` (its family, first come first). Whoever
   * is ahead is served first, so a waiter never overtakes one ahead of it that does not fit yet.
   */
  standing(ahead: readonly LockKind[]): LineStanding;
}

/** What a caller holds: the whole key, one of `limit` permits, or a read or write share. */
export type LockKind = KindStrategy &
  (
    | { readonly type: 'mutex' }
    | { readonly type: 'semaphore'; readonly limit: number }
    | { readonly type: 'read' }
    | { readonly type: 'write' }
  );

/** Exclusive kinds wait for the one just ahead of them, and hold alone. */
const exclusive = {
  shared: false,
  permits: 1,
  covers: () => true,
  admits: (holders: readonly LockKind[]) => holders.length === 0,
  standing: (ahead: readonly LockKind[]): LineStanding =>
    ahead.length === 0 ? { holds: true } : { holds: false, behind: ahead.length - 1 },
};

const MUTEX: LockKind = {
  ...exclusive,
  type: 'mutex',
  tag: '',
  description: 'a mutex',
  family: 'mutex',
};

const WRITE: LockKind = {
  ...exclusive,
  type: 'write',
  tag: 'w.',
  shared: true,
  description: 'a read-write lock (write)',
  family: '#rw',
};

const READ: LockKind = {
  type: 'read',
  tag: 'r.',
  shared: true,
  permits: 1,
  description: 'a read-write lock (read)',
  family: '#rw',
  covers: (asked) => asked.type === 'read',
  admits: (holders) => !holders.some((holder) => holder.type === 'write'),
  // A reader waits for the nearest writer ahead of it, and holds beside the readers.
  standing: (ahead) => {
    let writer = ahead.length - 1;
    while (writer >= 0 && ahead[writer].type !== 'write') writer--;
    return writer < 0 ? { holds: true } : { holds: false, behind: writer };
  },
};

/** Semaphores by limit and permits taken, made once each. */
const semaphores = new Map<string, LockKind>();

/** How many permits the holders of a semaphore take together. */
function permitsOf(kinds: readonly LockKind[]): number {
  let total = 0;
  for (const kind of kinds) total += kind.permits;
  return total;
}

function semaphore(limit: number, permits = 1): LockKind {
  const name = permits === 1 ? `${limit}` : `${limit}x${permits}`;
  let kind = semaphores.get(name);
  if (!kind) {
    kind = {
      type: 'semaphore',
      limit,
      permits,
      tag: `s${name}.`,
      shared: true,
      description:
        `a semaphore of limit ${limit}` + (permits === 1 ? '' : ` (${permits} permits at once)`),
      family: `#s${limit}`,
      // Nested work may reuse a hold of as many permits as it asks for, or more.
      covers: (asked) =>
        asked.type === 'semaphore' && asked.limit === limit && asked.permits <= permits,
      admits: (holders) => permitsOf(holders) + permits <= limit,
      // Any permit's release may be the one that lets it in: it waits for any change.
      standing: (ahead) =>
        permitsOf(ahead) + permits <= limit ? { holds: true } : { holds: false },
    };
    semaphores.set(name, kind);
  }
  return kind;
}

/**
 * The kind that the options `limit`, `permits` and `mode` ask for; `limit: 1` is the mutex.
 */
export function kindOf(options: {
  limit?: number;
  permits?: number;
  mode?: 'read' | 'write';
}): LockKind {
  if (options.mode !== undefined) return options.mode === 'read' ? READ : WRITE;
  if (options.limit !== undefined && options.limit > 1) {
    return semaphore(options.limit, options.permits);
  }
  return MUTEX;
}

const TAGGED = /^(?:s(\d+)(?:x(\d+))?|([rw]))\./;

/** The kind a token was made for (see {@link KindStrategy.tag}). */
export function kindOfToken(token: string): LockKind {
  const match = TAGGED.exec(token);
  if (!match) return MUTEX;
  if (match[1] !== undefined) {
    return semaphore(Number(match[1]), match[2] === undefined ? 1 : Number(match[2]));
  }
  return match[3] === 'r' ? READ : WRITE;
}

/**
 * The error of a caller that found the lock it names `name` (without the prefix) held as another
 * kind: `heldAs` is what the lock key holds, a kind's family marker or a mutex holder's token.
 */
export function kindConflict(name: string, token: string, heldAs: string): LockKindError {
  const limit = /^#s(\d+)$/.exec(heldAs)?.[1];
  const held =
    limit !== undefined
      ? `a semaphore of limit ${limit}`
      : heldAs === '#rw'
        ? 'a read-write lock'
        : 'a mutex';
  return new LockKindError(name, held, kindOfToken(token).description);
}
