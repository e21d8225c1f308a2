import { LuaScript } from '../lua-script.js';
import { flagOf, listOf } from '../script-reply.js';
import { SHARED_LUA } from './shared.lua.js';

/**
 * Renews semaphore permits and read or write shares, many in one call: the watchdog's batch,
 * `extend()` and `holdFor`. A permit is renewed only while its own expiry has not passed and the
 * key still holds its kind's marker; the marker then lives as long as the longest holder.
 *
 * KEYS: for each permit, its lock key, its holders key and their fencing tokens' key. ARGV:
 * token and ttl (ms) for each permit, in order. Returns one entry per permit: 1 when renewed, 0
 * when it was gone.
 */
export const SHARED_RENEW_SCRIPT = new LuaScript<string[], (string | number)[], boolean[]>(
  `${SHARED_LUA}
local now = now_ms()
local renewed = {}
for i = 1, #KEYS, 3 do
  local lock, holders, tenures = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  local n = (i + 2) / 3
  local token = ARGV[2 * n - 1]
  local marker = marker_of(token)
  local expiry = tonumber(redis.call('ZSCORE', holders, token) or '0')
  if expiry > now and redis.call('GET', lock) == marker then
    redis.call('ZADD', holders, now + tonumber(ARGV[2 * n]), token)
    sync(lock, holders, tenures, marker, now)
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
`,
  (reply) => listOf(reply).map(flagOf),
);
