import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { WithLock } from 'nestjs-redis-lock';
import { STATE_STORE, type StateStore } from '../state/state-store.js';

/** How long a user must wait between two submissions of one assignment. */
export const SUBMIT_INTERVAL_MS = 5_000;

export interface Submission {
  id: string;
  userId: string;
  assignmentId: string;
  content: string;
  submittedAt: string;
}

/**
 * The submission throttle: one submission per user and assignment every 5 s, whichever
 * process the request reaches. Within the window, a submission gets 429 with `Retry-After`.
 */
@Injectable()
export class SubmissionsService {
  constructor(@Inject(STATE_STORE) private readonly state: StateStore) {}

  // The TTL matches the window, so that a submission arriving while the first one is still
  // being stored is told to retry when the window closes, not after the module's default TTL.
  @WithLock('submit:<userId>:<assignmentId>', {
    holdFor: SUBMIT_INTERVAL_MS,
    ttl: SUBMIT_INTERVAL_MS,
  })
  async submit(userId: string, assignmentId: string, content: string): Promise<Submission> {
    const submission: Submission = {
      id: randomUUID(),
      userId,
      assignmentId,
      content,
      submittedAt: new Date().toISOString(),
    };
    await this.state.append(submissionsKey(userId, assignmentId), JSON.stringify(submission));
    return submission;
  }

  async list(userId: string, assignmentId: string): Promise<Submission[]> {
    const stored = await this.state.list(submissionsKey(userId, assignmentId));
    return stored.map((json) => JSON.parse(json) as Submission);
  }
}

const submissionsKey = (userId: string, assignmentId: string) =>
  `submissions:${assignmentId}:${userId}`;
