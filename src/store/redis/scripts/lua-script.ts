import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/**
 * The scripts each connection (known by its socket, which ioredis replaces on every reconnect)
 * has sent with EVAL, so that its server has them cached.
 */
const cachedOn = new WeakMap<object, Set<string>>();

/**
 * A Lua script that runs by SHA (EVALSHA). The first call on each connection of a single
 * Redis, and any call made while the connection is being set up, sends the whole script
 * (EVAL), which runs it and caches it: a restarted server, which has forgotten it, is met by a
 * new connection. Otherwise, a NOSCRIPT answer would need a
 * second request, sent after whatever the connection sent meanwhile, and a release sent right
 * after an attempt could then run before it. On a Cluster (one cache per node), and after a
 * SCRIPT FLUSH, NOSCRIPT falls back to EVAL.
 */
export class LuaScript<
  Keys extends readonly string[],
  Args extends readonly (string | number)[],
  Reply,
> {
  readonly sha: string;

  /**
   * @param decode turns the script's raw reply into its typed answer, or throws when Redis
   *   answered something the script never returns
   */
  constructor(
    readonly source: string,
    readonly decode: (reply: unknown) => Reply,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Runs the script on `client` and decodes its reply. Every acquisition and release goes
   * through here, so it chains no more promises than the command itself and the decoding.
   */
  run(client: Redis | Cluster, keys: Keys, args: Args): Promise<Reply> {
    if (!('nodes' in client)) {
      // Only a connection that is up is the one the command goes out on. While ioredis
      // connects or reconnects, `stream` is missing or still the old socket, and the command
      // waits for a new one: then the whole script goes.
      const connection: object | undefined = client.status === 'ready' ? client.stream : undefined;
      const cached = connection && cachedOn.get(connection);
      if (!cached?.has(this.sha)) {
        return client.eval(this.source, keys.length, ...keys, ...args).then((reply) => {
          if (connection) {
            const scripts = cachedOn.get(connection) ?? new Set<string>();
            cachedOn.set(connection, scripts.add(this.sha));
          }
          return this.decode(reply);
        });
      }
    }
    return client.evalsha(this.sha, keys.length, ...keys, ...args).then(this.decode, (error) => {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args).then(this.decode);
    });
  }
}
