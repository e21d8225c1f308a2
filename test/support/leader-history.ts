import type { FencedResource, LeaderProcess } from './leader-child.js';

/**
 * How late, after the next term began, a leader may be told that its lease ran out: its
 * watchdog's timer fired late, as a starved process's timers do on a loaded machine (the
 * library allows only the drift, 2 ms + 1% of the ttl, for that): a short pause, which the
 * fence covers. As the safety checker allows (test/safety/checker/leader.mjs).
 */
export const LATE_TIMER_SLACK_MS = 250;

/** A term as the history shows it: who began it, with which epoch, when it began and ended. */
export interface TermRecord {
  process: LeaderProcess;
  epoch: number;
  at: number;
  abortedAt?: number;
  reason?: string;
}

/** Every term any of `processes` began, in the order they began on the machine's clock. */
export function termsOf(processes: readonly LeaderProcess[]): TermRecord[] {
  return processes
    .flatMap((process) =>
      process.events
        .filter((event) => event.type === 'lead')
        .map(({ epoch, at }) => {
          const abort = process.event('abort', epoch);
          const reason = abort?.type === 'abort' ? abort.reason : undefined;
          return { process, epoch, at, abortedAt: abort?.at, reason };
        }),
    )
    .sort((a, b) => a.at - b.at);
}

/**
 * What must hold of every election's history, whatever the faults: epochs grow from term to
 * term; a term ended (its signal aborted) before the next began, on the machine's monotonic
 * clock that every process reads, unless its process was `exempt` (paused, so that it could
 * not know, or killed, so that it could not tell) or it was told its lease ran out at most
 * {@link LATE_TIMER_SLACK_MS} late; and the resource never refused the write of
 * a term that no later term had followed: only deposed leaders are refused.
 * @returns what went wrong, empty when nothing did
 */
export function violationsOf(
  processes: readonly LeaderProcess[],
  resource: FencedResource,
  exempt: readonly LeaderProcess[] = [],
): string[] {
  const terms = termsOf(processes);
  const problems: string[] = [];
  terms.forEach((term, i) => {
    const next = terms[i + 1];
    const previous = terms[i - 1];
    if (previous && term.epoch <= previous.epoch) {
      problems.push(`epoch ${term.epoch} began after epoch ${previous.epoch}`);
    }
    if (!next || exempt.includes(term.process)) return;
    if (term.abortedAt === undefined) {
      problems.push(`epoch ${term.epoch} was never told it ended, and epoch ${next.epoch} began`);
    } else if (
      term.abortedAt > next.at &&
      !(
        term.abortedAt - next.at <= LATE_TIMER_SLACK_MS &&
        /validity ran out/.test(term.reason ?? '')
      )
    ) {
      problems.push(
        `epoch ${next.epoch} began ${(term.abortedAt - next.at).toFixed(1)} ms before ` +
          `epoch ${term.epoch}'s signal aborted`,
      );
    }
  });
  const latest = Math.max(0, ...terms.map((term) => term.epoch));
  for (const write of resource.writes) {
    if (!write.accepted && write.epoch >= latest) {
      problems.push(`the write of the latest epoch ${write.epoch} was refused`);
    }
  }
  return problems;
}
