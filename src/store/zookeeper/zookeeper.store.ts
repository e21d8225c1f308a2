import type { Client, Event, Stat } from 'node-zookeeper-client';
import { LockOptionsError } from '../../lock.errors.js';
import {
  handoverTo,
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
} from '../lock-store.interface.js';
import { kindConflict, kindOfToken } from '../lock-kind.js';
import { timedCommand, type TimedCommand } from '../redis/timed-command.js';
import { SharedWatches } from './shared-watches.js';
import { standing } from './zookeeper-kinds.js';
import { contenderPrefix, inLine, lockPath } from './zookeeper-paths.js';
import {
  codeOf,
  fencingTokenOf,
  EPHEMERAL_SEQUENTIAL,
  ZK_BAD_VERSION,
  ZK_NO_NODE,
  ZK_NODE_EXISTS,
  ZK_NOT_EMPTY,
  ZooKeeperSession,
  interrupted,
} from './zookeeper-session.js';

/** How the module sets up a {@link ZooKeeperLockStore}. */
export interface ZooKeeperLockStoreOptions {
  connectionString: string;
  /** The session timeout asked for, in ms. */
  sessionTimeout: number;
  /** The node under which every lock lives, e.g. `/locks`. */
  root: string;
  commandTimeout: number;
}

/**
 * The share of the session timeout that a lock's validity may span between two answers of the
 * server: a follower passes a session's activity on to the leader, which expires sessions, only
 * on its next tick (at most half the session timeout), so the rest is kept as a margin.
 */
const VALIDITY_SHARE = 2 / 3;

/** A contender of this process: a caller whose node stands in a lock's line. */
interface Contender {
  key: string;
  /** The lock's node, and the name of the contender's node under it once created. */
  parent: string;
  name?: string;
  /** The session that created the node: the node goes when it ends. */
  session: number;
  fencingToken?: number;
  /** A semaphore's waiter: which watch of the line is its own (see `watchLine`), if any. */
  lineWatch?: number;
  /** The caller left (released or gave up): its node goes as soon as the attempt ends. */
  departed: boolean;
  /** Called when the node the contender watches (its predecessor) goes. */
  wake: () => void;
}

const NOT_ACQUIRED: AcquireAttempt = { acquired: false, pttl: -1 };

/** How many deleted lock nodes the store remembers. */
const MAX_EMPTIED = 1_024;

/** How soon a deletion that failed (the connection was lost) is tried again, in ms. */
const LEAVE_RETRY_DELAY = 200;

/**
 * How many times the store makes an operation whose calls were interrupted (the connection
 * dropped, or the session expired, before their answers came; see `interrupted`). Calls made
 * meanwhile wait in the client's queue for the next connection, so the tries come no faster
 * than connections do.
 */
const CALL_TRIES = 3;

/** The data of a contender's node: none (a renewal rewrites it, see `touched`). */
const EMPTY = Buffer.alloc(0);

/**
 * The lock store on ZooKeeper, the recipe of the seed: each contender creates an ephemeral
 * sequential node under the lock's node; the smallest sequence holds the lock, the others wait
 * in that order, each woken by the deletion of the node just before its own (no herd), and a
 * crashed process's nodes go with its session. The session is the lease: a lock's validity
 * counts from the last answer the server gave this session, for at most two thirds of the
 * session timeout. The fencing token is the node's creation zxid, which grows across the
 * ensemble. Semaphores and read-write locks stand in the same line, each node's kind named by
 * its token (see `standing`): a reader waits for the nearest writer before it, a semaphore's
 * waiter for any change of the line.
 */
export class ZooKeeperLockStore implements LockStore {
  private readonly session: ZooKeeperSession;
  private readonly command: TimedCommand;
  private readonly contenders = new Map<string, Contender>();
  /** The attempts on their way, by token: a release waits for its caller's before it leaves. */
  private readonly attempts = new Map<string, Promise<unknown>>();
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private rootReady?: Promise<void>;
  /** Lock nodes this store deleted last (oldest first), to create again without a failed try. */
  private readonly emptied = new Set<string>();
  /** Deletions to try again. */
  private readonly retries = new Set<NodeJS.Timeout>();
  /** How many watches of a line semaphores' waiters have set (see `watchLine`). */
  private lineWatchIds = 0;
  /** The watches for a node's deletion, and of a line, that contenders of this process share. */
  private readonly nodeWatches = new SharedWatches<true>();
  private readonly lineWatches = new SharedWatches<string[]>();

  constructor(private readonly options: ZooKeeperLockStoreOptions) {
    this.command = timedCommand(options.commandTimeout, 'ZooKeeper');
    this.session = new ZooKeeperSession(options.connectionString, options.sessionTimeout, () =>
      this.sessionExpired(),
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
    const reply = this.command(key, 'acquire', () => this.attempt(key, token, queue));
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
    const running = this.attempts.get(token);
    const before = this.contenders.get(token);
    if (!before && !running) return { released: false };
    if (before) before.departed = true;
    await running?.catch(() => undefined);
    // An attempt interrupted by an expired session lines the caller up again as a new contender.
    const contender = this.contenders.get(token);
    if (!contender) return { released: false };
    contender.departed = true;
    const released = await this.command(key, 'release', () => this.leave(contender, token));
    return { released };
  }

  /** A waiter's place is its ephemeral node, which lives as long as the session: no lease. */
  async keepPlaces(): Promise<void> {}

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
            (await this.touched(`${contender.parent}/${contender.name}`))
          ) {
            return true;
          }
          this.forget(contender, token);
          return false;
        }),
      ),
    );
  }

  async isLocked(key: string): Promise<boolean> {
    return this.command(key, 'isLocked', () =>
      this.retried(async () => {
        const children = await this.children(lockPath(this.options.root, key));
        return children.length > 0;
      }),
    );
  }

  /**
   * The resource is a node of its own under the root, holding the value and the highest token
   * as JSON, and replaced only by a write that presents the version it read.
   */
  async writeFenced(
    resource: string,
    _guard: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    if (ttl !== 0) {
      throw new LockOptionsError('ttl', ttl, 'nothing: a fenced value on ZooKeeper never expires');
    }
    const path = lockPath(this.options.root, resource);
    const data = Buffer.from(JSON.stringify({ fencingToken, value }));
    return this.command(resource, 'writeFenced', async () => {
      await this.ensureRoot();
      for (;;) {
        const current = await this.read(path);
        if (current === undefined) {
          if (await this.created(path, data)) return { written: true };
          continue;
        }
        const highestSeen = (JSON.parse(current.data.toString()) as { fencingToken: number })
          .fencingToken;
        if (fencingToken < highestSeen) return { written: false, highestSeen };
        if (await this.replaced(path, data, current.version)) return { written: true };
      }
    });
  }

  /** Release notices: the deletion of the node that a contender of `key` watches. */
  subscribe(key: string, onRelease: (message: string) => void): Promise<() => void> {
    let listeners = this.listeners.get(key);
    if (!listeners) this.listeners.set(key, (listeners = new Set()));
    listeners.add(onRelease);
    return Promise.resolve(() => {
      listeners.delete(onRelease);
      if (listeners.size === 0 && this.listeners.get(key) === listeners) {
        this.listeners.delete(key);
      }
    });
  }

  /** Ends the session, which deletes every node this process still has. */
  close(): Promise<void> {
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
    this.session.close();
    this.contenders.clear();
    this.listeners.clear();
    this.nodeWatches.clear();
    this.lineWatches.clear();
    return Promise.resolve();
  }

  /**
   * On ZooKeeper a lock's validity is bounded by the session: refuses a ttl that the session
   * granted by the server cannot vouch for.
   */
  private checkTtl(ttl: number): void {
    const limit = Math.floor(this.session.grantedTimeout * VALIDITY_SHARE);
    if (ttl > limit) {
      throw new LockOptionsError(
        'ttl',
        ttl,
        `at most ${limit} ms on ZooKeeper: two thirds of the session timeout ` +
          `(${this.session.grantedTimeout} ms) that the server granted`,
      );
    }
  }

  /**
   * One attempt of a token at a time: one that timed out may still be running (its calls wait
   * for a connection) when its caller tries again, and two beside each other could each create
   * a node, one of which nobody would delete. The next starts when the last has settled, so
   * that every call it makes is sent after its caller's request.
   */
  private attempt(key: string, token: string, queue: boolean): Promise<AcquireAttempt> {
    const run = () =>
      this.retried(() => this.attemptOnce(key, token, queue, this.contenders.get(token)));
    const before = this.attempts.get(token);
    const running = before ? before.then(run, run) : run();
    this.attempts.set(token, running);
    const settled = () => {
      if (this.attempts.get(token) === running) this.attempts.delete(token);
    };
    running.then(settled, settled);
    return running;
  }

  /**
   * Runs `operation`, and again while its calls are interrupted, up to {@link CALL_TRIES}
   * times: each try first learns what the interrupted one did (see `attemptOnce`, `leave`).
   */
  private async retried<T>(operation: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await operation();
      } catch (error) {
        if (tries >= CALL_TRIES || !interrupted(error)) throw error;
      }
    }
  }

  private async attemptOnce(
    key: string,
    token: string,
    queue: boolean,
    known: Contender | undefined,
  ): Promise<AcquireAttempt> {
    const parent = lockPath(this.options.root, key);
    let contender = known;
    if (contender && contender.session !== this.session.current) {
      // Its node went with an expired session: the caller lines up again, at the back.
      this.contenders.delete(token);
      contender = undefined;
    }
    if (!contender) {
      if (!queue && !this.wouldHold(key, token, await this.children(parent))) return NOT_ACQUIRED;
      contender = this.enter(key, parent, token);
      await this.createNode(contender, token);
    } else if (contender.name === undefined) {
      // The answer to its node's creation was lost with the connection, in this session: the
      // node is there if the server applied the creation, and its name starts with the token.
      const mine = (await this.children(parent)).find((name) =>
        name.startsWith(contenderPrefix(token)),
      );
      if (mine) contender.name = mine;
      else await this.createNode(contender, token);
    }
    return this.lookUp(contender, token, queue);
  }

  /**
   * Whether a newcomer with `token` would hold, behind the nodes in `children` (a `tryAcquire`
   * creates no node otherwise).
   * @throws LockKindError when they are of another kind
   */
  private wouldHold(key: string, token: string, children: string[]): boolean {
    const where = standing(inLine(children), children.length, kindOfToken(token));
    if ('conflict' in where) throw kindConflict(key, token, where.conflict);
    return where.holds;
  }

  private enter(key: string, parent: string, token: string): Contender {
    const contender: Contender = {
      key,
      parent,
      session: this.session.current,
      departed: false,
      wake: () => {
        if (this.contenders.get(token) !== contender || contender.departed) return;
        for (const listener of this.listeners.get(key) ?? []) listener(handoverTo(token));
      },
    };
    this.contenders.set(token, contender);
    return contender;
  }

  /** Creates the contender's node, and the lock's node first if need be. */
  private async createNode(contender: Contender, token: string): Promise<void> {
    await this.ensureRoot();
    // A lock node this store deleted is created again right ahead of the contender's node (a
    // session's requests are applied in order), in the same round trip.
    const recreating = this.emptied.delete(contender.parent)
      ? this.created(contender.parent).catch(() => false)
      : undefined;
    for (;;) {
      const request = this.session.call<string>((client, done) =>
        client.create(`${contender.parent}/${contenderPrefix(token)}`, EPHEMERAL_SEQUENTIAL, done),
      );
      contender.session = this.session.current;
      try {
        const path = await request;
        contender.name = path.slice(contender.parent.length + 1);
        await recreating;
        return;
      } catch (error) {
        if (codeOf(error) !== ZK_NO_NODE) throw error;
      }
      // The lock's node is missing, or a release that left it empty just deleted it.
      await this.created(contender.parent);
    }
  }

  /**
   * Where the contender stands (see `standing`): it holds, or it waits, watching what must change
   * before it may hold, or its line holds another kind of lock (it leaves, refused).
   * @throws LockKindError when a node of another kind is ahead of its own
   */
  private async lookUp(
    contender: Contender,
    token: string,
    queue: boolean,
  ): Promise<AcquireAttempt> {
    const path = `${contender.parent}/${contender.name}`;
    for (;;) {
      const [children, stat] = await Promise.all([
        this.children(contender.parent),
        contender.fencingToken === undefined ? this.stat(path) : undefined,
      ]);
      if (stat) contender.fencingToken = fencingTokenOf(contender.key, stat);
      const line = inLine(children);
      const place = line.indexOf(contender.name ?? '');
      if (place < 0 || contender.fencingToken === undefined) {
        // The node is gone: its session expired meanwhile.
        this.contenders.delete(token);
        return NOT_ACQUIRED;
      }
      const where = standing(line, place, kindOfToken(token));
      if ('conflict' in where) {
        // Should the deletion fail, it is retried in the background (see `leave`).
        await this.leave(contender, token).catch(() => undefined);
        throw kindConflict(contender.key, token, where.conflict);
      }
      if (where.holds) {
        // A watch of the line set while it waited is no longer its own: it must not wake it.
        contender.lineWatch = undefined;
        return { acquired: true, fencingToken: contender.fencingToken };
      }
      if (!queue) {
        await this.leave(contender, token);
        return NOT_ACQUIRED;
      }
      if (where.behind !== undefined) {
        if (await this.watch(`${contender.parent}/${where.behind}`, contender.wake)) {
          return NOT_ACQUIRED;
        }
      } else if (contender.lineWatch !== undefined || (await this.watchLine(contender, token))) {
        return NOT_ACQUIRED;
      }
    }
  }

  /**
   * Deletes the contender's node, then the lock's node if that left it empty. A deletion that
   * fails is retried while the session lives: a node left behind would hold the line until the
   * session ends, as no TTL ends it.
   */
  private async leave(contender: Contender, token: string): Promise<boolean> {
    for (let tries = 1; ; tries++) {
      if (contender.session !== this.session.current) {
        this.forget(contender, token);
        return false;
      }
      const deleting = this.deleteNodesOf(contender, token, tries > 1);
      // Sent right behind the deletion, applied after it: one round trip for both.
      // An empty lock node left by a lost answer costs one node, until the key's next release.
      const emptying = contender.name
        ? this.removeIfEmpty(contender.parent).catch(() => undefined)
        : undefined;
      let deleted: boolean;
      try {
        deleted = await deleting;
      } catch (error) {
        if (tries < CALL_TRIES && interrupted(error)) continue;
        this.retryLeave(contender, token);
        throw error;
      }
      this.forget(contender, token);
      await (emptying ?? this.removeIfEmpty(contender.parent).catch(() => undefined));
      return deleted;
    }
  }

  /**
   * Deletes the contender's node; when the answer to its creation was lost, the nodes its token
   * names (at most one). `false` when there was none. After an interrupted deletion (`again`),
   * a node found gone in the same session was deleted by that deletion: nobody else deletes the
   * ephemeral nodes of a live session.
   */
  private async deleteNodesOf(
    contender: Contender,
    token: string,
    again: boolean,
  ): Promise<boolean> {
    const names = contender.name
      ? [contender.name]
      : (await this.children(contender.parent)).filter((name) =>
          name.startsWith(contenderPrefix(token)),
        );
    let deleted = false;
    for (const name of names) {
      try {
        await this.session.call<void>((client, done) =>
          client.remove(`${contender.parent}/${name}`, -1, done),
        );
        deleted = true;
      } catch (error) {
        if (codeOf(error) !== ZK_NO_NODE) throw error;
        deleted ||= again && contender.name !== undefined;
      }
    }
    return deleted;
  }

  private retryLeave(contender: Contender, token: string): void {
    contender.departed = true;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      if (this.contenders.get(token) === contender) {
        this.leave(contender, token).catch(() => undefined);
      }
    }, LEAVE_RETRY_DELAY);
    timer.unref();
    this.retries.add(timer);
  }

  private forget(contender: Contender, token: string): void {
    if (this.contenders.get(token) === contender) this.contenders.delete(token);
  }

  private async removeIfEmpty(path: string): Promise<void> {
    try {
      await this.session.call<void>((client, done) => client.remove(path, -1, done));
      this.emptied.add(path);
      if (this.emptied.size > MAX_EMPTIED) {
        const [oldest] = this.emptied;
        this.emptied.delete(oldest);
      }
    } catch (error) {
      const code = codeOf(error);
      if (code !== ZK_NOT_EMPTY && code !== ZK_NO_NODE) throw error;
    }
  }

  /**
   * Writes nothing new to our own node, to learn whether it and its session live. A write goes
   * through the leader, which checks the session: its success proves the session alive when it
   * was sent, which a read does not (a follower cut off from the leader answers reads until it
   * notices, while the leader may expire the session and let another holder in). `false` when
   * the node is gone.
   */
  private async touched(path: string): Promise<boolean> {
    try {
      await this.session.call<Stat>((client, done) => client.setData(path, EMPTY, -1, done));
      return true;
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return false;
      throw error;
    }
  }

  /**
   * Watches `path` for its deletion; `false` when it is already gone. The holder's renewals
   * write to its node ({@link touched}), which fires the watch too: it is set again then.
   */
  private async watch(path: string, onDeleted: () => void): Promise<boolean> {
    const listener = (event: Event) => {
      if (event.getName() !== 'NODE_DATA_CHANGED') {
        onDeleted();
        return;
      }
      // Set again without prompting anybody: an attempt now would only find the holder there.
      // Should this fail, the waiter is woken to look for itself (a waiter behind its process's
      // head has no fallback re-check; a connection error then does not end its wait).
      this.watch(path, onDeleted).then(
        (present) => present || onDeleted(),
        () => onDeleted(),
      );
    };
    const present = await this.nodeWatches.join(path, listener, (watcher) =>
      this.session
        .call<Buffer>((client, done) => client.getData(path, watcher, done))
        .then(() => true as const, absentIfNoNode),
    );
    return present === true;
  }

  /**
   * Watches the line of a semaphore's waiter for any change until it may hold (a departure
   * anywhere ahead of it may let it in, not only its predecessor's), and only then wakes it:
   * every waiter of the key is told of every change (a herd), but looks at it here, as the
   * engine lets one waiter of a process try at a time, and a waiter woken in vain would hold
   * up those of its process behind it. `false` when it may hold already, or its node is gone:
   * look again.
   */
  private async watchLine(contender: Contender, token: string): Promise<boolean> {
    const id = ++this.lineWatchIds;
    contender.lineWatch = id;
    const changed = () => {
      if (contender.lineWatch !== id || this.contenders.get(token) !== contender) return;
      contender.lineWatch = undefined;
      if (contender.departed) return;
      this.watchLine(contender, token).then(
        (waits) => waits || contender.wake(),
        // Its attempt will meet the error, or set the watch again.
        () => contender.wake(),
      );
    };
    try {
      const children = await this.lineWatches.join(contender.parent, changed, (watcher) =>
        this.session
          .call<string[]>((client, done) => client.getChildren(contender.parent, watcher, done))
          .then((answer) => answer, absentIfNoNode),
      );
      if (children === undefined) {
        if (contender.lineWatch === id) contender.lineWatch = undefined;
        return false;
      }
      const line = inLine(children);
      const place = line.indexOf(contender.name ?? '');
      const where = place < 0 ? undefined : standing(line, place, kindOfToken(token));
      if (where && 'holds' in where && !where.holds) return true;
    } catch (error) {
      if (contender.lineWatch === id) contender.lineWatch = undefined;
      throw error;
    }
    // Its watch outlives the wait: it finds itself stale when it fires.
    if (contender.lineWatch === id) contender.lineWatch = undefined;
    return false;
  }

  private async children(path: string): Promise<string[]> {
    try {
      return await this.session.call<string[]>((client, done) => client.getChildren(path, done));
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return [];
      throw error;
    }
  }

  private stat(path: string): Promise<Stat | undefined> {
    return this.session.call<Stat | undefined>((client, done) =>
      client.exists(path, (error, stat) => done(error, stat ?? undefined)),
    );
  }

  private async read(path: string): Promise<{ data: Buffer; version: number } | undefined> {
    try {
      return await this.session.call((client, done) =>
        client.getData(path, (error, data, stat) => done(error, { data, version: stat?.version })),
      );
    } catch (error) {
      if (codeOf(error) === ZK_NO_NODE) return undefined;
      throw error;
    }
  }

  /** Creates a persistent node; `false` when it already exists. */
  private async created(path: string, data?: Buffer): Promise<boolean> {
    try {
      await this.session.call<string>((client: Client, done) =>
        data ? client.create(path, data, done) : client.create(path, done),
      );
      return true;
    } catch (error) {
      if (codeOf(error) === ZK_NODE_EXISTS) return false;
      throw error;
    }
  }

  /** Sets a node's data if it still has `version`; `false` when it changed meanwhile. */
  private async replaced(path: string, data: Buffer, version: number): Promise<boolean> {
    try {
      await this.session.call<Stat>((client, done) => client.setData(path, data, version, done));
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === ZK_BAD_VERSION || code === ZK_NO_NODE) return false;
      throw error;
    }
  }

  /** The root node (and its ancestors), created once per store. */
  private ensureRoot(): Promise<void> {
    this.rootReady ??= this.session
      .call<string>((client, done) => client.mkdirp(this.options.root, done))
      .then(
        () => undefined,
        (error: unknown) => {
          this.rootReady = undefined;
          throw error;
        },
      );
    return this.rootReady;
  }

  /**
   * The session expired: its nodes are gone, so its contenders hold nothing. Holders learn it
   * at their next renewal; waiters line up again on their next attempt.
   */
  private sessionExpired(): void {
    this.rootReady = undefined;
    this.nodeWatches.clear();
    this.lineWatches.clear();
    for (const [token, contender] of this.contenders) {
      contender.session = -1;
      contender.wake();
      if (contender.departed) this.contenders.delete(token);
    }
  }
}

/** What a read that sets a watch answers when its node is gone: nothing to watch. */
function absentIfNoNode(error: unknown): undefined {
  if (codeOf(error) === ZK_NO_NODE) return undefined;
  throw error;
}
