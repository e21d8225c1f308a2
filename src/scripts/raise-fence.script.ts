import { LuaScript } from './lua-script.js';

/**
 * Raises a fencing counter to at least a given token (RedLock). A lock on N masters carries
 * the highest token its majority issued; writing it back to that majority means that any later
 * majority, which shares a master with this one, issues a greater token.
 *
 * KEYS: fencing counter. ARGV: fencing token, counter ttl (ms). Returns 1.
 */
export const RAISE_FENCE_SCRIPT = new LuaScript(`
local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > last then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
`);
