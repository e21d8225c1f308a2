import { LuaScript } from './lua-script.js';
import { flagOf, listOf } from './script-reply.js';

/**
 * Compare-and-pexpire for many locks in one call: the watchdog's batch and `extend()`.
 *
 * KEYS: for each lock, its key and its tenure (see `FENCE_LUA`), which lives as long.
 * ARGV: token and ttl (ms) for each lock, in order.
 * Returns one entry per lock: 1 when renewed, 0 when the key no longer holds that token.
 */
export const RENEW_SCRIPT = new LuaScript<string[], (string | number)[], boolean[]>(
  `
local renewed = {}
for i = 1, #KEYS, 2 do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    redis.call('PEXPIRE', KEYS[i], ARGV[i + 1])
    redis.call('PEXPIRE', KEYS[i + 1], ARGV[i + 1])
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
`,
  (reply) => listOf(reply).map(flagOf),
);
