import { kindOfToken, type LockKind } from '../lock-kind.js';

/*
 * Where a contender stands in a lock's line, for each kind of lock. Every contender of a key
 * has a node in one line, named after its token, which begins with its kind's tag: so a node's
 * name tells its kind, and the line alone tells who holds.
 *
 *   mutex, writer   holds when first; waits for the node just before its own
 *   reader          holds when no writer's node comes before its own; waits for the nearest one
 *   semaphore (N)   holds when the permits of the nodes before its own and its own add up to
 *                   at most N (one each, unless a token asks for more); waits for any change
 *                   of the line (a departure anywhere ahead may let it in, not only its
 *                   predecessor's)
 *
 * A contender whose line begins with a node of another kind (a mutex, a read-write lock, or a
 * semaphore of another limit) is refused (`LockKindError`) and leaves. A node of another kind
 * further on is that node's own mistake: it will find the nodes of this kind ahead of it and
 * leave, so a contender behind it waits for it to go rather than being refused for it (a
 * crashed one goes with its session). So whoever holds at any moment is of one kind: a
 * contender holds only while every node before its own was of its kind when it looked, and
 * nodes only ever leave the part of the line before a node.
 */

/** What a contender's place in line tells. */
export type Standing =
  | { holds: true }
  /** It waits: for the deletion of the node `behind`, or for any change of the line. */
  | { holds: false; behind?: string }
  /** The line begins with a node of another kind: `heldAs` for `kindConflict`. */
  | { conflict: string };

/**
 * Where the contender of `kind` at `place` in `line` (names first come first) stands; `place`
 * may be the line's length, to ask whether a newcomer would hold. Its kind decides (see
 * `LockKind.standing`), among the nodes ahead of it, which are of its family unless the line
 * begins with a node of another kind.
 */
export function standing(line: readonly string[], place: number, kind: LockKind): Standing {
  const ahead: LockKind[] = [];
  for (let i = 0; i < place; i++) {
    const other = kindOfToken(line[i]);
    if (other.family !== kind.family) {
      if (i > 0) return { holds: false, behind: line[i] };
      return { conflict: other.type === 'mutex' ? line[i] : other.family };
    }
    ahead.push(other);
  }
  const where = kind.standing(ahead);
  if (where.holds) return where;
  return where.behind === undefined
    ? { holds: false }
    : { holds: false, behind: line[where.behind] };
}
