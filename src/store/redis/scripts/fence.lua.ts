import { FENCE_AHEAD_US } from '../../throttle-window.js';

/**
 * Lua shared by the scripts that write a fencing counter (KEYS[2]) or a mutex's lock value. One
 * counter serves every lock of its key prefix and hash slot (or of its prefix and server, off a
 * Cluster), so there are never more of them per prefix than slots: a counter is kept without
 * expiry, which costs one key per slot and saves every acquisition the work of keeping the
 * longest TTL any lock of the slot asked for.
 *
 * A mutex's lock key holds `"<token> <fencing token>"`, so that the grant that issues the
 * fencing token records it for `inspect()` in the same write, and a renewal or release touches
 * one key. A value that ends in `" +"` tells its release that waiters may be queued: every
 * write of a lock while its queue exists sets the mark (and a waiter that queues sets it on the
 * lock it waits for), so that a release without the mark skips looking at the queue. A mark
 * left after the queue emptied costs that release one `EXISTS`; see `QUEUE_LUA` for why a
 * missing one strands nobody. Tokens hold no space (see `ownerMark`), and a semaphore's or
 * read-write lock's marker begins with `#`.
 */
export const FENCE_LUA = `
local function set_fence(fence)
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
end

local function lock_value(token, fence, queued)
  return token .. ' ' .. string.format('%.0f', fence) .. (queued and ' +' or '')
end

local function holder_of(value)
  return value and string.match(value, '^%S+')
end

-- The fencing token recorded in a mutex's value, if any.
local function fence_of(value)
  return tonumber(value and string.match(value, '^%S+ (%d+)') or '')
end

local function holds(value, token)
  return holder_of(value) == token
end

local function queue_marked(value)
  return string.byte(value, -1) == 43
end
`;

/**
 * Lua of the scripts that issue fencing tokens (KEYS[2] the counter): the next token is above
 * the counter's last one and never below the Redis server clock in µs. The counter is nearly
 * always behind the clock (it holds the last token issued, and the clock moves on between two
 * scripts), so the common case takes one `SET … GET`, which writes the clock and returns the
 * last token in one command (Redis 6.2 and later; the version is known to scripts from Redis 7
 * on, and Redis 6.2 takes the two-command path). Only when the counter is ahead (the clock went
 * back, or a failover brought a master whose clock is behind) does a second `SET` put the
 * counter's last token + 1 in its place: the script runs atomically, so nobody sees the clock
 * value in between, and the two writes replicate together. The same clock dates a throttle's
 * window from its holder's fencing token (`window_left`), for the refusals it causes.
 */
export const NEXT_FENCE_LUA = `${FENCE_LUA}
local function server_time_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local SET_GET = (redis.REDIS_VERSION_NUM or 0) >= 0x060200

-- The holdFor a throttle's token carries after its kind's tag (see throttleTag), or nil.
local function hold_for_of(token)
  return string.match(token or '', '^h(%d+)%.') or string.match(token or '', '^[srw][%dx]*%.h(%d+)%.')
end

-- What is left, in ms, of the window of a throttle that holds with token and fencing token
-- fence (see windowLeftOf in throttle-window.ts), or -1: no throttle, no datable grant, or a
-- window that has closed.
local function window_left(token, fence)
  local hold_for = hold_for_of(token)
  if not hold_for or not fence then return -1 end
  local now = server_time_us()
  if fence > now + ${FENCE_AHEAD_US} then return -1 end
  local left = math.ceil(math.min(tonumber(hold_for), (fence - now) / 1000 + tonumber(hold_for)))
  return left > 0 and left or -1
end

local function next_fence()
  local now = server_time_us()
  local last
  if SET_GET then
    last = tonumber(redis.call('SET', KEYS[2], string.format('%.0f', now), 'GET') or '0') or 0
    if last < now then return now end
  else
    last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
    if last < now then
      set_fence(now)
      return now
    end
  end
  set_fence(last + 1)
  return last + 1
end
`;
