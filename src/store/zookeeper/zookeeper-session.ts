import { Socket } from 'node:net';
import type { Client, Exception, Stat } from 'node-zookeeper-client';
import { LockError } from '../../lock.errors.js';
import { OUTAGE_REPORT_INTERVAL } from '../connection-report.js';
import { monotonicNow } from '../../engine/clock.js';
import { mendFraming } from './client-framing.js';
import { loadZooKeeperClient } from './zookeeper-client.js';

/** Longest wait for the server to close the session when the store closes, in ms. */
const CLOSE_BOUND = 2_000;
/** Least time a (re)connection's handshake is given before it is cut, in ms. */
const HANDSHAKE_FLOOR = 1_000;

/** ZooKeeper's error codes that the store tells apart (see the server's KeeperException). */
export const ZK_CONNECTION_LOSS = -4;
export const ZK_NO_NODE = -101;
export const ZK_BAD_VERSION = -103;
export const ZK_NODE_EXISTS = -110;
export const ZK_NOT_EMPTY = -111;

/** The creation flags of an ephemeral sequential node, as the protocol numbers them. */
export const EPHEMERAL_SEQUENTIAL = 3;

/** The ZooKeeper error code of a failed call, or `undefined` for another failure. */
export function codeOf(error: unknown): number | undefined {
  const code = (error as Partial<Exception> | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * The fencing token of a contender's node: its creation zxid (8 bytes, big-endian), which grows
 * across the ensemble and its leader elections.
 * @param name the lock's key as the caller named it, for the error
 * @throws LockError when the zxid is beyond the safe integers, rather than lose precision
 */
export function fencingTokenOf(name: string, stat: Pick<Stat, 'czxid'>): number {
  const zxid = stat.czxid.readBigUInt64BE(0);
  if (zxid > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new LockError(
      `Lock "${name}": ZooKeeper's zxid ${zxid} is beyond Number.MAX_SAFE_INTEGER, so it cannot ` +
        'serve as a fencing token without losing precision',
    );
  }
  return Number(zxid);
}

/**
 * One ZooKeeper session at a time, and the next when it expires: the client library ends an
 * expired session's client for good, so a new client (a new session) replaces it. Requests
 * made while the client (re)connects wait in the library's queue.
 */
export class ZooKeeperSession {
  private client?: Client;
  /**
   * How to fail each call on its way on the current client: the client library never answers
   * the calls it queued while disconnected once the session has expired.
   */
  private pending = new Set<(error: Error) => void>();
  /**
   * Which session a request sent now goes on; ephemeral nodes belong to one of them. It moves
   * on as soon as a session expires, not when the next client is made: a request sent between
   * the two goes on the next session, and a node it creates must not be dated to the old one.
   */
  private generation = 1;
  private closed = false;
  /** While the client is not connected: cuts a handshake that gets no answer (see below). */
  private handshakeTimer?: NodeJS.Timeout;
  /** While the client is not connected: says so after `unreachable.after` ms (see below). */
  private unreachableTimer?: NodeJS.Timeout;
  /** When a frame the client could not read was last warned of. */
  private misreadAt = -Infinity;

  /**
   * @param unreachable how long the client may go without a connection before `warn` hears of
   *   it (and again while it lasts, see `watchUnreachable`)
   */
  constructor(
    private readonly connectionString: string,
    private readonly sessionTimeout: number,
    private readonly onExpired: (generation: number) => void,
    private readonly unreachable: { after: number; warn: (message: string) => void },
  ) {
    loadZooKeeperClient(connectionString);
  }

  /** A frame the client could not read: a warning, at most one per outage report interval. */
  private misread(error: unknown): void {
    const now = monotonicNow();
    if (now - this.misreadAt < OUTAGE_REPORT_INTERVAL) return;
    this.misreadAt = now;
    this.unreachable.warn(
      `ZooKeeper: an answer could not be read (${asError(error).message}); ` +
        'reconnecting in the same session',
    );
  }

  /** The session's number: it changes when a session expires and a new one begins. */
  get current(): number {
    return this.generation;
  }

  /**
   * The session timeout that the server granted (it clamps the one asked for into its own
   * bounds), or the one asked for before the first connection.
   */
  get grantedTimeout(): number {
    const granted = this.client?.getSessionTimeout();
    return granted !== undefined && granted > 0 ? granted : this.sessionTimeout;
  }

  /** The client's state as the client library names it (`SYNC_CONNECTED`, `DISCONNECTED`, …). */
  get state(): string {
    if (this.closed) return 'CLOSED';
    return this.client?.getState().name ?? 'NOT_CONNECTED';
  }

  /** The live client, created (and connecting) on first use. */
  connection(): Client {
    if (this.closed) throw new Error('the ZooKeeper session is closed');
    if (this.client) return this.client;
    const zookeeper = loadZooKeeperClient(this.connectionString);
    const client = zookeeper.createClient(this.connectionString, {
      sessionTimeout: this.sessionTimeout,
      spinDelay: 100,
      retries: 0,
    });
    mendFraming(client, (error) => this.misread(error));
    const generation = this.generation;
    client.once('expired', () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.generation = generation + 1;
      this.stopHandshakeWatch();
      this.stopUnreachableWatch();
      client.close();
      this.failPending(new SessionExpiredError());
      this.onExpired(generation);
    });
    client.on('disconnected', () => {
      if (this.client !== client) return;
      this.watchHandshake(client);
      this.watchUnreachable(client);
    });
    client.on('connected', () => {
      this.stopHandshakeWatch();
      this.stopUnreachableWatch();
    });
    client.connect();
    this.client = client;
    // The first handshake too: an app may boot while its server restarts.
    this.watchHandshake(client);
    this.watchUnreachable(client);
    return client;
  }

  /**
   * Ends the session: its ephemeral nodes go at once. Resolves once the server has closed it
   * (its connection ends), or after {@link CLOSE_BOUND} ms: a process that exits right after
   * would otherwise leave its nodes behind until the session times out.
   */
  close(): Promise<void> {
    this.closed = true;
    this.stopHandshakeWatch();
    this.stopUnreachableWatch();
    const client = this.client;
    this.client = undefined;
    this.failPending(new Error('the ZooKeeper session is closed'));
    if (!client) return Promise.resolve();
    // A session never granted (the server was down since boot) has nothing to end: no wait.
    const patience = client.getSessionId().some((byte) => byte !== 0) ? CLOSE_BOUND : 0;
    return new Promise((resolve) => {
      const end = () => {
        const closed = () => {
          clearTimeout(bound);
          resolve();
        };
        const bound = setTimeout(() => {
          // No answer (a server that never took the handshake, say): the socket goes too, with
          // an error, which ends the client library's timer of a TCP connection still on its way.
          socketOf(client)?.destroy(new Error('the ZooKeeper session is closed'));
          closed();
        }, patience);
        client.once('disconnected', closed);
        client.close();
      };
      // A client made in this tick opens its socket in the next, and its close writes to it.
      if (socketOf(client)) end();
      else process.nextTick(end);
    });
  }

  /** Runs one call of the client with a Node-style callback, as a promise of its result. */
  call<T>(send: (client: Client, done: (error: unknown, result: T) => void) => void): Promise<T> {
    const client = this.connection();
    const pending = this.pending;
    return new Promise<T>((resolve, reject) => {
      pending.add(reject);
      send(client, (error, result) => {
        pending.delete(reject);
        if (error) reject(asError(error));
        else resolve(result);
      });
    });
  }

  /**
   * The client library bounds the TCP connect, but not the session handshake after it: a server
   * that accepts the connection but never answers (one still starting after a restart) would
   * keep the client waiting forever, and every call with it. So, while disconnected, the socket
   * is cut every third of the session timeout (as often as the library pings; a second at
   * least, for the server to create a session), which makes the library connect again, with the
   * same session. A socket still making its TCP connection is left to the library's own timer
   * of it, which would otherwise cut a later socket.
   */
  private watchHandshake(client: Client): void {
    this.stopHandshakeWatch();
    this.handshakeTimer = setInterval(
      () => {
        if (this.client !== client) return this.stopHandshakeWatch();
        const socket = socketOf(client);
        if (socket && !socket.connecting) socket.destroy();
      },
      Math.max(HANDSHAKE_FLOOR, Math.floor(this.sessionTimeout / 3)),
    );
    this.handshakeTimer.unref();
  }

  private stopHandshakeWatch(): void {
    clearInterval(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  /**
   * The client library retries a server that refuses or does not answer without a word, so a
   * ZooKeeper that cannot be reached would go unnoticed until calls time out: as for Redis, a
   * connection not made in time is reported, then about once per {@link OUTAGE_REPORT_INTERVAL}
   * (the session connects at boot, calls or none), while the library goes on trying.
   */
  private watchUnreachable(client: Client): void {
    if (this.unreachableTimer) return;
    const { after, warn } = this.unreachable;
    let periods = 0;
    this.unreachableTimer = setInterval(() => {
      if (this.client !== client) return this.stopUnreachableWatch();
      if (periods++ % Math.ceil(OUTAGE_REPORT_INTERVAL / after) !== 0) return;
      warn(
        `ZooKeeper connection error: no connection to ${this.connectionString} for ` +
          `${periods * after} ms; still trying`,
      );
    }, after);
    this.unreachableTimer.unref();
  }

  private stopUnreachableWatch(): void {
    clearInterval(this.unreachableTimer);
    this.unreachableTimer = undefined;
  }

  private failPending(error: Error): void {
    const pending = this.pending;
    this.pending = new Set();
    for (const fail of pending) fail(error);
  }
}

/**
 * A call that was on its way when its session expired: whatever it did went with the session's
 * ephemeral nodes, and a new session serves the next call.
 */
export class SessionExpiredError extends Error {
  constructor() {
    super('the ZooKeeper session expired');
    this.name = 'SessionExpiredError';
  }
}

/**
 * Whether a call failed without an answer that says what became of it: the connection dropped
 * (the session lives on, and the call may or may not have been applied) or the session expired.
 * Such a call can be made again once the store has checked what the first one did.
 */
export function interrupted(error: unknown): boolean {
  return error instanceof SessionExpiredError || codeOf(error) === ZK_CONNECTION_LOSS;
}

/** The client's exceptions are Errors; anything else is made one. */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The socket of the client's current connection: a private field of node-zookeeper-client 1.x
 * (`connectionManager.socket`), read defensively.
 */
function socketOf(client: Client): Socket | undefined {
  const manager = (client as unknown as { connectionManager?: { socket?: unknown } })
    .connectionManager;
  const socket = manager?.socket;
  return socket instanceof Socket ? socket : undefined;
}
