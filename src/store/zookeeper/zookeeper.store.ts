import type { LockStoreCapabilities } from '../capabilities.js';
import { LockOptionsError } from '../../lock.errors.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import {
  type LockEvent,
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
  type StoredLock,
} from '../lock-store.interface.js';
import { timedCommand, type TimedCommand } from '../timed-command.js';
import { type Contender, Contenders } from './contender.js';
import { ContenderAttempts } from './contender-attempts.js';
import { ContenderWatches } from './contender-watches.js';
import { Departures } from './departures.js';
import { writeFenced } from './fenced-writes.js';
import { LineStandings } from './line-standings.js';
import { evictHolders, isTaken, lineView } from './line-view.js';
import { LockNodes } from './lock-nodes.js';
import { ThrottleWindows } from './throttle-windows.js';
import { TurnListeners } from './turn-listeners.js';
import { checkTtlInSession, type ZooKeeperLockStoreOptions } from './zookeeper.options.js';
import { retried, ZooKeeperNodes } from './zookeeper-nodes.js';
import { lockPath } from './zookeeper-paths.js';
import { ZooKeeperSession } from './zookeeper-session.js';

/**
 * The lock store on ZooKeeper, ZooKeeper's own lock recipe: each contender creates an ephemeral
 * sequential node under the lock's node; the smallest sequence holds the lock, the others wait
 * in that order, each woken by the deletion of the node just before its own (no herd), and a
 * crashed process's nodes go with its session. The session is the lease: a lock's validity
 * counts from the last answer the server gave this session, for at most two thirds of the
 * session timeout. The fencing token is the node's creation zxid, which grows across the
 * ensemble. Semaphores and read-write locks stand in the same line, each node's kind named by
 * its token (see `standing`): a reader waits for the nearest writer before it, a semaphore's
 * waiter for any change of the line.
 *
 * The parts: {@link ContenderAttempts} (a caller's node in the line), {@link LineStandings}
 * (whether it holds, what it watches), {@link ContenderWatches}, {@link Departures} (releases),
 * {@link LockNodes} (the root and the lock nodes), and {@link writeFenced}.
 */
export class ZooKeeperLockStore implements LockStore {
  readonly capabilities: LockStoreCapabilities = {
    backend: 'ZooKeeper',
    queueing: true,
    throttle: 'mutex',
    kinds: true,
    keepAlive: 'session',
    handles: false,
    why: {
      throttle: ': a throttle window on ZooKeeper closes the whole key, so it is for a mutex',
      keepAlive:
        ': a lock lives as long as the session, which the client keeps alive, so it cannot ' +
        'end by itself after its ttl',
      handles: ': a lock node belongs to the session that created it, no other process can use it',
    },
  };
  private readonly session: ZooKeeperSession;
  private readonly command: TimedCommand;
  private readonly nodes: ZooKeeperNodes;
  private readonly lockNodes: LockNodes;
  private readonly contenders: Contenders;
  private readonly watches: ContenderWatches;
  private readonly departures: Departures;
  private readonly attempts: ContenderAttempts;
  private readonly windows: ThrottleWindows;
  private readonly listeners = new TurnListeners();

  constructor(private readonly options: ZooKeeperLockStoreOptions) {
    this.command = timedCommand(options.commandTimeout, options.keyPrefix, 'ZooKeeper');
    this.session = new ZooKeeperSession(
      options.connectionString,
      options.sessionTimeout,
      () => this.sessionExpired(),
      // A call waits for a connection at most this long: when that runs out, the log says why.
      { after: options.commandTimeout, warn: options.onError ?? (() => undefined) },
    );
    this.nodes = new ZooKeeperNodes(this.session);
    this.lockNodes = new LockNodes(this.nodes, options.root);
    this.contenders = new Contenders(({ key, token }) => this.listeners.turn(key, token));
    this.watches = new ContenderWatches(this.nodes, this.contenders);
    this.departures = new Departures(this.session, this.nodes, this.lockNodes, this.contenders);
    this.windows = new ThrottleWindows(this.nodes, options.root);
    const standings = new LineStandings(
      this.nodes,
      this.contenders,
      this.watches,
      this.departures,
      this.windows,
      options.keyPrefix,
    );
    this.attempts = new ContenderAttempts(
      this.session,
      this.nodes,
      this.lockNodes,
      this.contenders,
      standings,
      options.root,
    );
  }

  async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    this.checkTtl(ttl);
    const reply = this.command(key, 'acquire', () => this.attempts.attempt(key, token, queue));
    const attempt = await reply.catch((error: unknown) => {
      // A node created though the attempt failed (its answer lost, or late) would hold the
      // line for everyone behind it, unless the caller waits on and its next attempt finds it.
      void reply.late
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => (inUse() ? undefined : this.release(key, token)))
        .catch(() => undefined);
      throw error;
    });
    if (attempt.acquired) {
      // Before the first connection, the ttl was checked against the session timeout asked
      // for; the server may have granted less, which is known now.
      try {
        this.checkTtl(ttl);
      } catch (error) {
        await this.release(key, token).catch(() => undefined);
        throw error;
      }
    }
    return attempt;
  }

  /** Deletes the caller's node; a lock is never handed over directly (its successor's watch fires). */
  async release(key: string, token: string): Promise<ReleaseOutcome> {
    const contender = await this.departing(token);
    if (!contender) return { released: false };
    const released = await this.command(key, 'release', () => this.departures.leave(contender));
    return { released };
  }

  /**
   * The holder leaves, its node replaced by a window that keeps the key taken for `keepFor` ms
   * more, dated by the server (see {@link ThrottleWindows}).
   */
  async holdWindow(key: string, token: string, keepFor: number): Promise<boolean> {
    const endsAt = performance.now() + keepFor;
    const contender = await this.departing(token);
    if (!contender?.name) return contender ? (await this.release(key, token)).released : false;
    return this.command(key, 'release', () =>
      this.departures.leaveWithWindow(contender, this.windows, endsAt),
    );
  }

  async renew(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    for (const { ttl } of entries) this.checkTtl(ttl);
    return Promise.all(
      entries.map(({ key, token }) =>
        this.command(key, 'renew', async () => {
          const contender = this.contenders.get(token);
          // A node whose release failed is being deleted in the background: not ours to use.
          if (!contender?.name || contender.departed) return false;
          if (
            contender.session === this.session.current &&
            (await this.nodes.touched(contender.path))
          ) {
            return true;
          }
          this.contenders.forget(contender);
          return false;
        }),
      ),
    );
  }

  async isLocked(key: string): Promise<boolean> {
    const path = lockPath(this.options.root, key);
    return this.command(key, 'isLocked', () =>
      retried(() => isTaken(this.nodes, this.windows, path, key)),
    );
  }

  /** The line of contenders under the lock's node (see {@link lineView}). */
  async inspect(key: string): Promise<StoredLock> {
    const name = lockNameOf(this.options.keyPrefix, key);
    return this.command(key, 'inspect', () =>
      retried(() => lineView(this.nodes, lockPath(this.options.root, key), name)),
    );
  }

  /** Reads the root node's stat: an answer proves the session reaches a server. */
  async ping(): Promise<Record<string, unknown>> {
    await this.command(this.options.root, 'ping', () => this.nodes.stat(this.options.root));
    return {};
  }

  connectionDetails(): Record<string, unknown> {
    return { session: this.session.state };
  }

  /** Deletes the nodes that hold the lock (see {@link evictHolders}). */
  async forceRelease(key: string): Promise<number> {
    const path = lockPath(this.options.root, key);
    return this.command(key, 'forceRelease', () =>
      retried(() => evictHolders(this.nodes, this.lockNodes, path)),
    );
  }

  /**
   * The resource is a node of its own under the root, holding the value and the highest token
   * as JSON, and replaced only by a write that presents the version it read.
   */
  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    if (ttl !== 0) {
      throw new LockOptionsError('ttl', ttl, 'nothing: a fenced value on ZooKeeper never expires');
    }
    const path = lockPath(this.options.root, resource);
    return this.command(resource, 'writeFenced', () =>
      writeFenced(this.nodes, this.lockNodes, path, { fencingToken, value }),
    );
  }

  /**
   * The turns of the contenders of `key`: a contender's watch wakes it (see
   * {@link ContenderWatches}), and its caller hears that its turn came, for its next attempt.
   */
  subscribe(key: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    return Promise.resolve(this.listeners.add(key, onEvent));
  }

  /** The app has booted: the session connects now, not with the first call (see `LockStore.open`). */
  open(): void {
    this.session.connection();
  }

  /** Ends the session, which deletes every node this process still has. */
  close(): Promise<void> {
    this.departures.close();
    this.windows.clear();
    this.lockNodes.close();
    const closed = this.session.close();
    this.contenders.clear();
    this.listeners.clear();
    this.watches.clear();
    return closed;
  }

  /**
   * The contender of `token` once its attempt on its way has settled, marked as leaving;
   * `undefined` when it has no node (an attempt interrupted by an expired session lines its
   * caller up again as a new contender).
   */
  private async departing(token: string): Promise<Contender | undefined> {
    const running = this.attempts.runningFor(token);
    const before = this.contenders.get(token);
    if (!before && !running) return undefined;
    if (before) before.departed = true;
    await running?.catch(() => undefined);
    const contender = this.contenders.get(token);
    if (contender) contender.departed = true;
    return contender;
  }

  private checkTtl(ttl: number): void {
    checkTtlInSession(ttl, this.session.grantedTimeout);
  }

  /**
   * The session expired: its nodes are gone, so its contenders hold nothing. Holders learn it
   * at their next renewal; waiters line up again on their next attempt.
   */
  private sessionExpired(): void {
    this.lockNodes.sessionExpired();
    this.watches.clear();
    this.contenders.sessionExpired();
  }
}
