import { createHash } from 'node:crypto';
import type { RedisClientPort, RedisScript } from '../redis-client.port.js';

/**
 * A Lua script that runs by SHA (EVALSHA), typed once: its keys and arguments in, its decoded
 * reply out. How a client gets the script to a server that lacks it (EVAL on a new connection,
 * or after NOSCRIPT) is the client's (see `RedisClientPort.runScript`).
 */
export class LuaScript<
  Keys extends readonly string[],
  Args extends readonly (string | number)[],
  Reply,
> implements RedisScript<Reply> {
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

  /** Runs the script on `client` and decodes its reply. */
  run(client: RedisClientPort, keys: Keys, args: Args): Promise<Reply> {
    return client.runScript(this, keys, args);
  }
}
