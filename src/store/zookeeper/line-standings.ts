import { lockNameOf } from '../../keys/lock-keys.js';
import type { AcquireAttempt } from '../lock-store.interface.js';
import { kindConflict, kindOfToken } from '../lock-kind.js';
import type { Contender, Contenders } from './contender.js';
import type { ContenderWatches } from './contender-watches.js';
import type { Departures } from './departures.js';
import { standing } from './zookeeper-kinds.js';
import type { ThrottleWindow, ThrottleWindows } from './throttle-windows.js';
import { serverTimeOf, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { inLine } from './zookeeper-paths.js';
import { fencingTokenOf } from './zookeeper-session.js';

export const NOT_ACQUIRED: AcquireAttempt = { acquired: false, pttl: -1 };

/**
 * Where contenders stand in their lock's line, by their kind (see `standing`): whether one
 * holds, and if not, what it watches until it may.
 */
export class LineStandings {
  /** @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name */
  constructor(
    private readonly nodes: ZooKeeperNodes,
    private readonly contenders: Contenders,
    private readonly watches: ContenderWatches,
    private readonly departures: Departures,
    private readonly windows: ThrottleWindows,
    private readonly keyPrefix: string,
  ) {}

  /**
   * Whether a newcomer with `token` would hold, behind the nodes in `children` (a `tryAcquire`
   * creates no node otherwise).
   * @throws LockKindError when they are of another kind
   */
  wouldHold(key: string, token: string, children: string[]): boolean {
    const where = standing(inLine(children), children.length, kindOfToken(token));
    if ('conflict' in where) throw kindConflict(this.nameOf(key), token, where.conflict);
    return where.holds;
  }

  /**
   * Where the contender stands: it holds, or it waits, watching what must change before it may
   * hold (without `queue`, it leaves instead), or its line holds another kind of lock (it
   * leaves, refused). Looks again when what it would watch is gone already, or went while it
   * set the watch. A contender first in line while a throttle's window closes the key holds
   * nothing yet: it is told how long the window stays closed, as its `windowLeft` too (without
   * `queue`, it leaves). A refusal by a live holder that is a throttle reports its window as
   * its node's creation dates it (see `ThrottleWindows.heldOpen`).
   * @throws LockKindError when a node of another kind is ahead of its own
   */
  async lookUp(contender: Contender, queue: boolean): Promise<AcquireAttempt> {
    for (;;) {
      const wakes = contender.wakes;
      const [children, stat, window] = await Promise.all([
        this.nodes.children(contender.parent),
        contender.fencingToken === undefined ? this.nodes.stat(contender.path) : undefined,
        this.windows.read(contender.key),
      ]);
      if (stat) {
        contender.fencingToken = fencingTokenOf(this.nameOf(contender.key), stat);
        contender.createdAt = serverTimeOf(stat.ctime);
      }
      const line = inLine(children);
      const place = line.indexOf(contender.name ?? '');
      if (place < 0 || contender.fencingToken === undefined) {
        // The node is gone: its session expired meanwhile.
        this.contenders.forget(contender);
        return NOT_ACQUIRED;
      }
      const where = standing(line, place, kindOfToken(contender.token));
      if ('conflict' in where) {
        // Should the deletion fail, it is retried in the background (see `Departures`).
        await this.departures.leave(contender).catch(() => undefined);
        throw kindConflict(this.nameOf(contender.key), contender.token, where.conflict);
      }
      if (where.holds) {
        // Its node's creation is a server time just taken; a later look needs a new one.
        const closed = window
          ? await this.windows.closedFor(window, stat && contender.createdAt)
          : 0;
        if (closed > 0) {
          if (!queue) await this.departures.leave(contender);
          return { acquired: false, pttl: closed, windowLeft: closed };
        }
        // A watch of the line set while it waited is no longer its own: it must not wake it.
        contender.lineWatch = undefined;
        return { acquired: true, fencingToken: contender.fencingToken };
      }
      if (!queue) {
        await this.departures.leave(contender);
        return this.refusal(contender.parent, line, window, stat && contender.createdAt);
      }
      // A watch can fire before the answer that set it is seen (both come in one read of the
      // socket): its turn is announced before the caller has joined its process's waiters, who
      // may not even listen to the key yet, and is lost. The attempt looks again instead.
      if ((await this.waits(contender, where.behind)) && contender.wakes === wakes) {
        return this.refusal(contender.parent, line, window, stat && contender.createdAt);
      }
    }
  }

  /**
   * The refusal of a caller behind `line` (first come first, under `parent`): a throttle's while
   * the key's `window` node keeps it closed (the first in line waits for it too), or when the
   * first in line holds as a throttle in its window (see `ThrottleWindows.heldOpen`). Only a
   * mutex is a throttle here, so the first in line is the one that holds. `now`: a server time,
   * if one was just taken.
   */
  async refusal(
    parent: string,
    line: readonly string[],
    window?: ThrottleWindow,
    now?: number,
  ): Promise<AcquireAttempt> {
    const closed = window ? await this.windows.closedFor(window, now) : 0;
    const windowLeft =
      closed > 0 ? closed : line[0] && (await this.windows.heldOpen(parent, line[0], now));
    return windowLeft ? { acquired: false, pttl: -1, windowLeft } : NOT_ACQUIRED;
  }

  /**
   * Sets the contender's watch: on the node `behind` its own, or on its line when it waits for
   * any change of it (a semaphore's waiter, which keeps a watch it has). `false` when there was
   * nothing to watch: look again.
   */
  private async waits(contender: Contender, behind: string | undefined): Promise<boolean> {
    if (behind !== undefined) {
      const path = `${contender.parent}/${behind}`;
      if (contender.watching === path) return true;
      contender.watching = path;
      const present = await this.watches
        .watch(path, () => {
          if (contender.watching === path) contender.watching = undefined;
          contender.wake();
        })
        .catch((error: unknown) => {
          if (contender.watching === path) contender.watching = undefined;
          throw error;
        });
      if (!present && contender.watching === path) contender.watching = undefined;
      return present;
    }
    return contender.lineWatch !== undefined || this.watches.watchLine(contender);
  }

  /** A lock key as the caller named it, for errors. */
  private nameOf(key: string): string {
    return lockNameOf(this.keyPrefix, key);
  }
}
