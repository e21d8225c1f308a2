import { markOfToken } from '../../src/engine/token.js';
import type { Call } from './run-types.js';
import type { World } from './world.js';

/**
 * Checked in a quiet run without a line (fair mode off) on the Redis-like store: a plain release
 * whose notice reached an instance with callers waiting for the key (calls on that key alone)
 * is answered by an attempt of that instance on the key that reaches the store within two ways
 * of a message (an attempt out when the notice came is answered within one, and the one sent
 * then arrives within another), unless those calls have all settled by then. A release heard
 * and answered by nobody would leave the lock free while the callers sleep until a re-check.
 */
export class ReleasesAnswered {
  /** When each instance (by the mark its tokens end with) last had an attempt on each key. */
  private readonly attempts = new Map<string, number>();

  /**
   * @param within how long a release may wait for its answer once its notice came, in ms
   * @param calls every call of the run, as the checker keeps them
   * @param fail reports a release left unanswered
   */
  constructor(
    private readonly world: World,
    private readonly within: number,
    private readonly calls: readonly Call[],
    private readonly fail: (instance: string, key: string) => void,
  ) {}

  /** The notice of a release of `key` reached the listeners of the instance marked `mark`. */
  heard(key: string, mark: string): void {
    const heardAt = this.world.now();
    const waiting = () =>
      this.calls.filter(
        (call) =>
          call.key === key &&
          call.waitTimeout > 0 &&
          `@${call.place.name}` === mark &&
          call.startedAt < heardAt &&
          call.settledAt === undefined,
      );
    if (waiting().length === 0) return;
    this.world.after(this.within, () => {
      if ((this.attempts.get(`${mark} ${key}`) ?? -Infinity) >= heardAt) return;
      if (waiting().length > 0) this.fail(mark, key);
    });
  }

  /** An attempt of `token`'s on `key` reached the store. */
  attempted(key: string, token: string): void {
    const mark = markOfToken(token);
    if (mark !== undefined) this.attempts.set(`${mark} ${key}`, this.world.now());
  }
}
