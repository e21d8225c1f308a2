/**
 * Lua shared by the scripts that write a fencing counter (KEYS[2]). One counter serves every
 * lock of its key prefix and hash slot (or of its prefix and server, off a Cluster), so there
 * are never more of them per prefix than slots: a counter is kept without expiry, which costs
 * one key per slot and saves every acquisition the work of keeping the longest TTL any lock of
 * the slot asked for.
 *
 * Since the counter serves many locks, the fencing token of a mutex's holder is recorded
 * beside its lock, in its tenure key (`"<token> <fencing token>"`, with the lock's TTL), for
 * `inspect()`: one write per grant, which renewals keep alive and a release deletes.
 */
export const FENCE_LUA = `
local function set_fence(fence)
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
end

local function record_tenure(tenure, token, fence, ttl)
  redis.call('SET', tenure, token .. ' ' .. string.format('%.0f', fence), 'PX', ttl)
end
`;

/**
 * Lua of the scripts that issue fencing tokens (KEYS[2] the counter): the next token is above
 * the counter's last one and never below the Redis server clock in µs. The last ARGV names the
 * counter that earlier versions kept outside the key prefix (see legacyFenceKeyOf): while it
 * exists, tokens stay above its last one too, and it is kept in step, so that tokens only grow
 * across an upgrade and while instances of both versions run side by side. The script does not
 * declare it, and touches it only where the ACL allows (an ACL confined to the prefix does not,
 * and its user never ran those versions): asked first, so that the ACL log records no refusal
 * (Redis 7); before Redis 7, a refusal is only caught.
 */
export const NEXT_FENCE_LUA = `${FENCE_LUA}
local function server_time_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function allowed(...)
  return redis.acl_check_cmd == nil or redis.acl_check_cmd(...)
end

local function legacy_fence()
  local key = ARGV[#ARGV]
  if not allowed('GET', key) then return nil end
  local value = redis.pcall('GET', key)
  if type(value) ~= 'string' then return nil end
  return tonumber(value)
end

local function next_fence()
  local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  local legacy = legacy_fence()
  local fence = math.max(last + 1, (legacy or 0) + 1, server_time_us())
  set_fence(fence)
  if legacy and allowed('SET', ARGV[#ARGV], '0') then
    redis.pcall('SET', ARGV[#ARGV], string.format('%.0f', fence))
  end
  return fence
end
`;
