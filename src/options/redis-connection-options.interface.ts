/**
 * Where one Redis server (or a Sentinel-managed master) is and how to connect to it, in
 * ioredis's names, as far as the module's types know them: ioredis's own `RedisOptions` fits,
 * as does any other of its options, yet these types need no client package installed. The
 * named options are those every `redisClient` takes (translated for the others than ioredis and
 * iovalkey); what else a library takes is checked at boot.
 */
export interface RedisConnectionOptions {
  host?: string | undefined;
  port?: number | undefined;
  /** A Unix socket, instead of `host` and `port`. */
  path?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  db?: number | undefined;
  /** Node's `tls.connect` options (ioredis's `tls`). */
  tls?: object | undefined;
  connectTimeout?: number | undefined;
  /** The Sentinels that know the master called `name`. */
  sentinels?: Array<{ host?: string | undefined; port?: number | undefined }> | undefined;
  name?: string | undefined;
  sentinelUsername?: string | undefined;
  sentinelPassword?: string | undefined;
  /**
   * Any other option of the library that connects. Only an index signature of `any` admits a
   * value typed by an interface of that library, such as ioredis's `RedisOptions`.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}

/** A Cluster node to start from: a port, `'host:port'`, or its host and port (ioredis's `ClusterNode`). */
export type RedisClusterNode =
  string | number | { host?: string | undefined; port?: number | undefined };

/**
 * A Cluster client's options, in ioredis's names (its `ClusterOptions` fits): `redisOptions`
 * holds what each node's connection takes.
 */
export interface RedisClusterOptions {
  redisOptions?: RedisConnectionOptions | undefined;
  /** Any other option of ioredis's `ClusterOptions`; see {@link RedisConnectionOptions}. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}
