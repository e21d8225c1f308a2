/**
 * Lua shared by the scripts that write a fencing counter (KEYS[2]). One counter serves every
 * lock of its hash slot (or of its server, off a Cluster), so there are never more of them than
 * slots: a counter is kept without expiry, which costs one key per slot and saves every
 * acquisition the work of keeping the longest TTL any lock of the slot asked for.
 */
export const FENCE_LUA = `
local function set_fence(fence)
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
end
`;

/**
 * Lua of the scripts that issue fencing tokens (KEYS[2] the counter): the next token is above
 * the counter's last one and never below the Redis server clock in µs.
 */
export const NEXT_FENCE_LUA = `${FENCE_LUA}
local function server_time_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function next_fence()
  local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  local fence = math.max(last + 1, server_time_us())
  set_fence(fence)
  return fence
end
`;
