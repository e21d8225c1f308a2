import { Inject, Injectable } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { LeaderElections } from './leader-elections.js';

/** Who leads an election, as the store says. */
export interface LeaderInfo {
  /** The leading instance's `instanceId`. */
  owner: string;
  /** Its term's epoch (the election lock's fencing token). */
  epoch: number;
}

/**
 * This instance's part in the leader elections of its `@Leader` methods: whether it leads,
 * its leadership as it changes, who leads according to the store, and stepping down.
 *
 * @example
 * ```ts
 * @Injectable()
 * class Status {
 *   constructor(private readonly leaders: LeaderService) {}
 *
 *   report() {
 *     return { relay: this.leaders.isLeader('outbox-relay') };
 *   }
 * }
 * ```
 */
@Injectable()
export class LeaderService {
  constructor(@Inject(LeaderElections) private readonly elections: LeaderElections) {}

  /**
   * Whether this instance leads `name` now: its term has not ended and its lock is within its
   * validity on this process's monotonic clock, so a process just woken from a pause longer
   * than the ttl answers `false` before any timer has run. `false` for an election it does not
   * stand in.
   */
  isLeader(name: string): boolean {
    return this.elections.isLeader(name);
  }

  /**
   * This instance's leadership of `name`: whether it leads when subscribed, then every change;
   * `false` is emitted when the term's signal has aborted. Completes when the app shuts down.
   */
  observe(name: string): Observable<boolean> {
    return this.elections.observe(name);
  }

  /**
   * Who leads `name`, as the store says, whichever instance it is: its `instanceId` (module
   * option) and its term's epoch; `null` when nobody leads (between terms: the leader is gone
   * and no standby has taken over yet). A leader that was cut off from the store may have
   * stepped down already while the store still shows it, until its lease runs out there.
   * @throws LockConnectionError when the store cannot be reached
   */
  async leader(name: string): Promise<LeaderInfo | null> {
    return this.elections.holder(name);
  }

  /**
   * Steps down from `name`: the term's signal aborts, the election's lock is released, and the
   * first standby in the store's line takes over at once; this instance then stands again,
   * behind the standbys. Resolves once the lock is released; nothing to do when this instance
   * does not lead.
   */
  async resign(name: string): Promise<void> {
    await this.elections.resign(name);
  }
}
