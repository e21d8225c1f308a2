import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/**
 * A Lua script that runs by SHA (EVALSHA) and falls back to EVAL once when the server does not
 * know it yet (a new or restarted Redis), after which Redis has it cached again.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis | Cluster, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
