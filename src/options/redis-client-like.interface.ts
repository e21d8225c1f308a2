/**
 * A client of another library than ioredis that the module reuses, as far as the module's
 * types know it (the library's own types stay optional): a node-redis client, Cluster or
 * Sentinel (`createClient`, `createCluster`, `createSentinel` of `redis` ^5 or ^6). What it is
 * is checked at boot. A client you pass is reused and never closed.
 */
export interface NodeRedisLikeClient {
  sendCommand(...args: never[]): Promise<unknown>;
  duplicate(...args: never[]): unknown;
}

/**
 * A `Redis` or `Cluster` of ioredis or of iovalkey (its fork, typed apart), of any copy of
 * either, as far as the module's types know it (so that they need neither installed).
 */
export interface IoRedisLikeClient {
  evalsha(...args: never[]): unknown;
  duplicate(...args: never[]): unknown;
}

/**
 * A Valkey GLIDE client: a `GlideClient` or `GlideClusterClient` of `@valkey/valkey-glide` 2.3
 * or later, known by its shape so that these types need no GLIDE installed.
 */
export interface GlideClientLike {
  invokeScript(...args: never[]): unknown;
  customCommand(...args: never[]): unknown;
  close(...args: never[]): unknown;
}

/**
 * A client the module reuses instead of connecting itself: an ioredis or iovalkey `Redis` or
 * `Cluster`, a node-redis client, Cluster or Sentinel, or a GLIDE `GlideClient` or
 * `GlideClusterClient`.
 */
export type RedisLikeClient = IoRedisLikeClient | NodeRedisLikeClient | GlideClientLike;
