import type {
  RedisClientPort,
  RedisScript,
  RedisSubscriber,
  SubscriberOptions,
} from '../redis-client.port.js';
import { closeNodeRedis } from './node-redis.connections.js';
import type { NodeRedisConnection } from './node-redis.types.js';

/**
 * How the adapter reaches one kind of node-redis client: a client of one server, a Cluster or
 * a Sentinel each send a raw command their own way.
 */
export interface NodeRedisTarget {
  readonly connection: NodeRedisConnection;
  readonly cluster: boolean;
  /** Whether commands may be sent before `connect()` has resolved (they queue meanwhile). */
  readonly queuesWhileConnecting: boolean;
  /** Sends a raw command; `firstKey` routes it on a Cluster. */
  send(firstKey: string | undefined, args: readonly string[]): Promise<unknown>;
  /** The socket a command sent now goes out on, when the client is on one and tells it. */
  socket(): number | undefined;
  /** @param opened resolves once the client is connected (the port connects its own) */
  subscriber(options: SubscriberOptions, opened: () => Promise<unknown>): RedisSubscriber;
}

/** The scripts each connection (socket) of a client has run with EVAL, so has cached. */
const cachedOn = new WeakMap<object, { socket: number; shas: Set<string> }>();

/**
 * The Redis client port on a node-redis client, Cluster or Sentinel (`redis` ^5 and ^6, in
 * RESP2 or RESP3: the scripts' replies, integers, strings, arrays and nulls, read the same).
 */
export class NodeRedisPort implements RedisClientPort {
  readonly cluster: boolean;
  readonly shardedSubscribe: boolean;
  private readonly connection: NodeRedisConnection;
  /** The module's own client connects on its first command (a failed boot opens nothing). */
  private opening?: Promise<unknown>;
  /** Whether {@link opening} has resolved. */
  private opened = false;
  private closed = false;
  /** Calls waiting for {@link opening}, which later calls queue behind, in order. */
  private waiting = 0;
  /** Between a failed connection attempt and the next (the module's own client only). */
  private retrying = false;

  /** @param owned whether the module created the client (it connects and closes it then) */
  constructor(
    private readonly target: NodeRedisTarget,
    private readonly owned: boolean,
  ) {
    this.connection = target.connection;
    this.cluster = target.cluster;
    this.shardedSubscribe = target.cluster;
    if (owned) {
      const connection = this.connection;
      connection.on('error', () => {
        if (!connection.isReady) this.retrying = true;
      });
      for (const event of ['reconnecting', 'connect', 'ready']) {
        connection.on(event, () => (this.retrying = false));
      }
    }
  }

  get reachable(): boolean {
    if (this.owned && !this.opening && !this.closed) return true;
    const { isOpen, isReady } = this.connection;
    return isOpen && (isReady || (this.owned && !this.retrying));
  }

  /**
   * As the ioredis adapter does: the first call on each connection of one server, and any call
   * made while it connects, sends the whole script (EVAL), which caches it there, so that a
   * release sent right after an attempt never waits for a NOSCRIPT answer and a second request
   * that would run after whatever was sent meanwhile. On a Cluster or a Sentinel (one cache per
   * node), and after a SCRIPT FLUSH, NOSCRIPT falls back to EVAL.
   */
  runScript<Reply>(
    script: RedisScript<Reply>,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<Reply> {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    const evalScript = () => this.send(keys[0], ['EVAL', script.source, ...tail]);
    const socket = this.connection.isReady ? this.target.socket() : undefined;
    if (!this.cluster && socket !== undefined) {
      const cached = cachedOn.get(this.connection);
      if (cached?.socket !== socket || !cached.shas.has(script.sha)) {
        return evalScript().then((reply) => {
          this.remember(socket, script.sha);
          return script.decode(plain(reply));
        });
      }
    }
    return this.send(keys[0], ['EVALSHA', script.sha, ...tail]).then(
      (reply) => script.decode(plain(reply)),
      (error: unknown) => {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return evalScript().then((reply) => script.decode(plain(reply)));
      },
    );
  }

  exists(key: string): Promise<number> {
    return this.send(key, ['EXISTS', key]).then(Number);
  }

  waitForReplicas(replicas: number, timeout: number): Promise<number> {
    return this.send(undefined, ['WAIT', String(replicas), String(timeout)]).then(Number);
  }

  hasCommand(command: string): Promise<boolean> {
    return this.send(undefined, ['COMMAND', 'INFO', command]).then(
      (info) => Array.isArray(info) && Boolean(info[0]),
    );
  }

  subscriber(options: SubscriberOptions): RedisSubscriber {
    return this.target.subscriber(options, () => this.whenOpen());
  }

  onError(listener: (error: unknown) => void): () => void {
    this.connection.on('error', listener);
    return () => void this.connection.off('error', listener);
  }

  onReady(listener: () => void): () => void {
    this.connection.on('ready', listener);
    return () => void this.connection.off('ready', listener);
  }

  /**
   * node-redis tells no close apart from its errors: a connection that was ready closes when
   * the client starts to reconnect, or ends.
   */
  onClose(listener: () => void): () => void {
    const connection = this.connection;
    let up = connection.isReady;
    const ready = () => void (up = true);
    const down = () => {
      if (!up || connection.isReady) return;
      up = false;
      listener();
    };
    const events: [string, () => void][] = [
      ['ready', ready],
      ['error', down],
      ['reconnecting', down],
      ['end', down],
    ];
    for (const [event, handler] of events) connection.on(event, handler);
    return () => {
      for (const [event, handler] of events) connection.off(event, handler);
    };
  }

  close(): Promise<void> {
    this.closed = true;
    return closeNodeRedis(this.connection);
  }

  private remember(socket: number, sha: string): void {
    let cached = cachedOn.get(this.connection);
    if (cached?.socket !== socket) {
      cached = { socket, shas: new Set() };
      cachedOn.set(this.connection, cached);
    }
    cached.shas.add(sha);
  }

  /**
   * Sends a command, connecting the module's own client first. A Cluster or a Sentinel takes no
   * command before it is connected: calls made meanwhile wait for it in the order they were
   * made, and calls made after them wait behind them.
   */
  private send(firstKey: string | undefined, args: readonly string[]): Promise<unknown> {
    if (!this.owned) return this.call(firstKey, args);
    if (!this.closed && (!this.opening || (this.opened && !this.connection.isOpen))) this.open();
    if (this.waiting === 0 && (this.opened || this.target.queuesWhileConnecting)) {
      return this.call(firstKey, args);
    }
    this.waiting++;
    return (this.opening ?? Promise.resolve()).then(
      () => {
        this.waiting--;
        return this.call(firstKey, args);
      },
      (error: unknown) => {
        this.waiting--;
        throw error;
      },
    );
  }

  /** Resolves once the client is connected, connecting the module's own. */
  private whenOpen(): Promise<unknown> {
    if (!this.owned) return Promise.resolve();
    if (!this.closed && !this.opening) this.open();
    return this.opening ?? Promise.resolve();
  }

  private open(): void {
    this.opened = false;
    const opening = this.connection.connect().then(() => void (this.opened = true));
    this.opening = opening;
    // A connection that never came up is tried again by the next command.
    opening.catch(() => {
      if (this.opening === opening) this.opening = undefined;
    });
  }

  private call(firstKey: string | undefined, args: readonly string[]): Promise<unknown> {
    try {
      return this.target.send(firstKey, args);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** A reply with any Buffer in it (a client configured to map strings to Buffers) as strings. */
function plain(reply: unknown): unknown {
  if (Buffer.isBuffer(reply)) return reply.toString();
  return Array.isArray(reply) ? reply.map(plain) : reply;
}
