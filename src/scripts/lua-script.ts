import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/**
 * The scripts each connection (known by its socket, which ioredis replaces on every reconnect)
 * has sent with EVAL, so that its server has them cached.
 */
const cachedOn = new WeakMap<object, Set<string>>();

/**
 * A Lua script that runs by SHA (EVALSHA). The first call on each connection of a single
 * Redis sends the whole script (EVAL), which runs it and caches it: a restarted server, which
 * has forgotten it, is met by a new connection. Otherwise, a NOSCRIPT answer would need a
 * second request, sent after whatever the connection sent meanwhile, and a release sent right
 * after an attempt could then run before it. On a Cluster (one cache per node), and after a
 * SCRIPT FLUSH, NOSCRIPT falls back to EVAL.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis | Cluster, keys: string[], args: (string | number)[]): Promise<unknown> {
    const connection = 'stream' in client ? (client.stream as object | undefined) : undefined;
    if (connection) {
      let cached = cachedOn.get(connection);
      if (!cached) cachedOn.set(connection, (cached = new Set()));
      if (!cached.has(this.sha)) {
        const reply = await client.eval(this.source, keys.length, ...keys, ...args);
        cached.add(this.sha);
        return reply;
      }
    }
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
