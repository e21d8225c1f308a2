/*
 * What the adapter uses of node-redis (the `redis` package, ^5 and ^6), typed here rather than
 * imported: the package is an optional peer, and its generic types differ between majors. A
 * client, a Cluster and a Sentinel share the connection's life cycle; each sends raw commands
 * in its own way.
 */

/** A pub/sub listener as node-redis calls it: the message first. */
export type NodeRedisListener = (message: string, channel: string) => void;

/** The connection's life cycle, and pub/sub, that a client, a Cluster and a Sentinel share. */
export interface NodeRedisConnection {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  /** Closes once the commands sent have their replies. */
  close(): Promise<unknown>;
  /** Closes at once, failing the commands sent. */
  destroy(): unknown;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  duplicate(overrides?: object): unknown;
  subscribe(channel: string, listener: NodeRedisListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  sSubscribe(channel: string, listener: NodeRedisListener): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
}

/** A client of one server (`createClient`). */
export interface NodeRedisClient extends NodeRedisConnection {
  /** Which socket the client is on: it grows with every new connection (node-redis 5+). */
  readonly socketEpoch?: number;
  readonly options?: NodeRedisClientOptions;
  sendCommand(args: readonly string[]): Promise<unknown>;
}

/** A Cluster client (`createCluster`): commands go to the master of their first key's slot. */
export interface NodeRedisCluster extends NodeRedisConnection {
  readonly masters: unknown[];
  nodeClient(node: unknown): unknown;
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: readonly string[],
  ): Promise<unknown>;
}

/** A Sentinel client (`createSentinel`): commands follow the master that the sentinels name. */
export interface NodeRedisSentinel extends NodeRedisConnection {
  getMasterNode(): unknown;
  getSentinelNode(): unknown;
  sendCommand(isReadonly: boolean | undefined, args: readonly string[]): Promise<unknown>;
}

/** The options of a client, as far as the boot line reads them (never a credential). */
export interface NodeRedisClientOptions {
  url?: string;
  socket?: { host?: string; port?: number; path?: string };
  database?: number;
  keyPrefix?: unknown;
}

/** The factories of the `redis` package. */
export interface NodeRedisModule {
  createClient(options: object): NodeRedisClient;
  createCluster(options: object): NodeRedisCluster;
  createSentinel(options: object): NodeRedisSentinel;
}

const has = (value: object, name: string) =>
  typeof (value as Record<string, unknown>)[name] === 'function';

/** Whether `value` is a node-redis client, Cluster or Sentinel (of any copy of the package). */
function isNodeRedis(value: unknown): value is NodeRedisConnection {
  return (
    typeof value === 'object' &&
    value !== null &&
    has(value, 'sendCommand') &&
    has(value, 'duplicate') &&
    has(value, 'connect') &&
    'isOpen' in value &&
    'isReady' in value
  );
}

/** A node-redis Sentinel client. */
export function isNodeRedisSentinel(value: unknown): value is NodeRedisSentinel {
  return isNodeRedis(value) && has(value, 'getMasterNode') && has(value, 'getSentinelNode');
}

/** A node-redis Cluster client. */
export function isNodeRedisCluster(value: unknown): value is NodeRedisCluster {
  return isNodeRedis(value) && has(value, 'nodeClient') && 'masters' in value;
}

/** A node-redis client of one server. */
export function isNodeRedisClient(value: unknown): value is NodeRedisClient {
  return isNodeRedis(value) && !isNodeRedisCluster(value) && !isNodeRedisSentinel(value);
}
