import { count } from './ask-masters.js';

/**
 * Whether entry `i` of a renewal across masters is decided: renewed by `quorum` of them, or
 * lost on more than `tolerated` (`undefined`: not yet).
 */
export function renewalOutcome(
  answers: readonly (boolean | undefined)[][],
  i: number,
  quorum: number,
  tolerated: number,
): boolean | undefined {
  const renewed = count(answers, (renewals) => renewals[i] === true);
  if (renewed >= quorum) return true;
  if (answers.length - renewed > tolerated) return false;
  return undefined;
}
