/**
 * A Lua script as a client runs it: by SHA, with its source for a server that lacks it, and the
 * decoding of its reply. `LuaScript` is the typed one the store calls.
 */
export interface RedisScript<Reply> {
  readonly source: string;
  /** The SHA-1 of `source`, as EVALSHA takes it. */
  readonly sha: string;
  /** Turns the raw reply into the script's answer, or throws on a reply it never gives. */
  readonly decode: (reply: unknown) => Reply;
}

/**
 * What the Redis lock store asks of a Redis client library (ioredis and iovalkey today, through
 * `IoRedisClient`): a script by SHA, a few plain commands, a subscriber connection, the
 * connection's state and its closing. Routing a key to its Cluster node is the client's.
 *
 * Order is part of the contract: calls made one after the other, without awaiting, go out in
 * that order on the connection (pipelined, not waiting for each other's replies). A release sent
 * right after an attempt must run after it, and renewals made in one turn share round trips.
 */
export interface RedisClientPort {
  /** A Cluster client: the keys of one script share a hash slot, and pub/sub may be sharded. */
  readonly cluster: boolean;
  /** Whether the connection is up or still being set up (false while it waits to reconnect). */
  readonly reachable: boolean;
  /** Whether the client can subscribe to sharded channels, one connection per shard. */
  readonly shardedSubscribe: boolean;
  /**
   * Runs `script` (EVALSHA, or EVAL when the server does not have it: NOSCRIPT, a new
   * connection) and decodes its reply.
   */
  runScript<Reply>(
    script: RedisScript<Reply>,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<Reply>;
  /** EXISTS: how many of the keys exist (1 or 0 for one key). */
  exists(key: string): Promise<number>;
  /** WAIT: how many replicas acknowledged the writes made on the connection so far. */
  waitForReplicas(replicas: number, timeout: number): Promise<number>;
  /** Whether the server knows `command` (COMMAND INFO). */
  hasCommand(command: string): Promise<boolean>;
  /** A connection of its own for subscriptions (a subscribed connection takes no commands). */
  subscriber(options: SubscriberOptions): RedisSubscriber;
  /** Calls `listener` with each connection error, until the returned function is called. */
  onError(listener: (error: unknown) => void): () => void;
  /** Calls `listener` each time the connection closes, until the returned function is called. */
  onClose(listener: () => void): () => void;
  /**
   * Calls `listener` each time the connection is ready again after it failed (or first
   * opened), until the returned function is called; absent where the client tells no such
   * moment.
   */
  onReady?(listener: () => void): () => void;
  /** Closes the connection: politely (QUIT) when it is up, and within a second. */
  close(): Promise<void>;
}

/** How a subscriber connection hears its channels. */
export interface SubscriberOptions {
  /** Sharded channels (SSUBSCRIBE, published with SPUBLISH) instead of plain ones. */
  sharded: boolean;
  onMessage: (channel: string, message: string) => void;
  onError: (error: unknown) => void;
}

/**
 * A connection subscribed to channels. It connects at once and queues its first SUBSCRIBE
 * until it is ready, whatever the options of the client it came from.
 */
export interface RedisSubscriber {
  /** Resolves once the server confirmed the subscription. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<void>;
}

/** A client for the store, and whether the module owns it (and closes it on shutdown). */
export interface RedisConnection {
  client: RedisClientPort;
  owned: boolean;
}
