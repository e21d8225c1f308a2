import { LuaScript } from './lua-script.js';
import { flagOf, listOf } from './script-reply.js';

/**
 * Compare-and-pexpire for many locks in one call: the watchdog's batch and `extend()`.
 *
 * KEYS: lock keys. ARGV: token and ttl (ms) for each key, in order.
 * Returns one entry per key: 1 when renewed, 0 when the key no longer holds that token.
 */
export const RENEW_SCRIPT = new LuaScript<string[], (string | number)[], boolean[]>(
  `
local renewed = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[2 * i - 1] then
    redis.call('PEXPIRE', key, ARGV[2 * i])
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
`,
  (reply) => listOf(reply).map(flagOf),
);
