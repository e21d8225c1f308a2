import { FENCE_LUA } from './fence.lua.js';
import { LuaScript } from './lua-script.js';
import { flagOf, listOf } from './script-reply.js';

/**
 * Compare-and-pexpire for many locks in one call: the watchdog's batch and `extend()`.
 *
 * KEYS: the lock keys. ARGV: token and ttl (ms) for each lock, in order.
 * Returns one entry per lock: 1 when renewed, 0 when the key no longer holds that token.
 */
export const RENEW_SCRIPT = new LuaScript<string[], (string | number)[], boolean[]>(
  `${FENCE_LUA}
local renewed = {}
for i = 1, #KEYS do
  if holds(redis.call('GET', KEYS[i]), ARGV[2 * i - 1]) then
    redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
`,
  (reply) => listOf(reply).map(flagOf),
);
