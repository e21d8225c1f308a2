/**
 * Lua shared by the scripts that write a fencing counter (KEYS[2]). One counter serves every
 * lock of its hash slot (or of its server, off a Cluster), so a write keeps whichever TTL is
 * longer, its own or the one a longer lock of the slot asked for.
 */
export const FENCE_LUA = `
local function set_fence(fence, fence_ttl)
  local ttl = math.max(fence_ttl, redis.call('PTTL', KEYS[2]))
  redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ttl)
end
`;
