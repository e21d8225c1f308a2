import { TURN_PREFIX } from '../../release-messages.js';
import { NEXT_FENCE_LUA } from '../fence.lua.js';
import { QUEUE_LUA } from '../queue.lua.js';

/**
 * Lua shared by the semaphore and read-write scripts, on top of the mutex's queue helpers
 * ({@link QUEUE_LUA}: fencing tokens, the waiters' leases), which they use on queue keys of
 * their own.
 *
 * KEYS, in the acquire and release scripts: [1] lock, [2] fencing counter of its slot, [3] queue
 * (zset: waiter token by arrival in µs), [4] waiters (hash: token to "<lease end, server ms> <ttl>"),
 * [5] holders (zset: token by expiry, server ms), [6] the mutex's queue of the same key, [7] the
 * holders' fencing tokens (hash: token to fencing token, for `inspect()`; it lives as long as
 * the holders, and loses a holder's entry with its release or expiry).
 *
 * While anybody holds a permit (or one is reserved for a waiter), the lock key holds the kind's
 * marker (`#s<limit>` or `#rw`), with the TTL of the longest-lived holder: a mutex caller then
 * finds the key taken and waits, `isLocked` sees it, and a caller of another kind or limit learns
 * what the key is held as. Each holder's own expiry is its score, so a holder that stops renewing
 * drops out at its TTL while the others stay. A token's tag tells its kind (`s<limit>.`, or
 * `s<limit>x<permits>.` for a hold of several permits, `r.`, `w.`), for holders and waiters
 * alike; a semaphore's holders take the sum of their permits.
 */
export const SHARED_LUA = `${NEXT_FENCE_LUA}${QUEUE_LUA}
local function kind_of(token)
  return string.sub(token, 1, 1)
end

local function marker_of(token)
  local limit = string.match(token, '^s(%d+)[x.]')
  return limit and ('#s' .. limit) or '#rw'
end

local function limit_of(token)
  return tonumber(string.match(token, '^s(%d+)[x.]') or '0')
end

-- How many of a semaphore's permits the holder of token takes.
local function permits_of(token)
  return tonumber(string.match(token, '^s%d+x(%d+)%.') or '1')
end

local function now_ms()
  return math.floor(server_time_us() / 1000)
end

-- Whether the caller of token may hold a permit beside the holders (expired ones dropped).
local function fits(holders, token, limit)
  local n = redis.call('ZCARD', holders)
  local kind = kind_of(token)
  if kind == 's' then
    local taken = permits_of(token)
    if n + taken > limit then return false end
    for _, holder in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
      taken = taken + permits_of(holder)
    end
    return taken <= limit
  end
  if kind == 'w' then return n == 0 end
  return n ~= 1 or kind_of(redis.call('ZRANGE', holders, 0, 0)[1]) ~= 'w'
end

-- Keeps the marker, the holders and their fencing tokens alive until the last holder's expiry,
-- or deletes them when nobody holds; returns whether anybody does.
local function sync(lock, holders, tenures, marker, now)
  local last = redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')[2]
  if not last then
    redis.call('DEL', lock, holders, tenures)
    return false
  end
  local ms = math.max(1, tonumber(last) - now)
  redis.call('SET', lock, marker, 'PX', ms)
  redis.call('PEXPIRE', holders, ms)
  redis.call('PEXPIRE', tenures, ms)
  return true
end

-- Drops the holders whose expiry has passed, and their fencing tokens: with one read when none
-- has, the soonest expiry.
local function drop_expired(now)
  local soonest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')[2]
  if not soonest or tonumber(soonest) > now then return end
  local held = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
  for i = 1, #held, 2 do
    if tonumber(held[i + 1]) > now then break end
    redis.call('HDEL', KEYS[7], held[i])
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
end

-- Makes token a holder until expiry (server ms), with a fencing token of its own, returned.
local function hold_permit(token, expiry)
  redis.call('ZADD', KEYS[5], expiry, token)
  local fence = next_fence()
  redis.call('HSET', KEYS[7], token, string.format('%.0f', fence))
  return fence
end

-- Gives free permits to the longest-waiting live waiters, in order, for as long as the next one
-- fits (a writer stops the readers behind it): to the successor its releaser named (a caller
-- of the releaser's own process), its permit at once with its whole TTL and its fencing token,
-- which is returned; to anybody else, a permit reserved for the handover lease and announced on
-- the turn channel of its instance (see turn_channel).
-- A waiter of another kind leaves the line; its next attempt tells it why.
local function grant_line(publish, turns, successor, marker, limit, now)
  local fence = false
  while true do
    local head, ttl = live_head()
    if not head then return fence end
    if marker_of(head) ~= marker then
      leave_queue(head)
    else
      if not fits(KEYS[5], head, limit) then return fence end
      leave_queue(head)
      if head == successor then
        fence = hold_permit(head, now + ttl)
      else
        redis.call('ZADD', KEYS[5], now + math.min(ttl, HANDOVER_LEASE), head)
        redis.call(publish, turn_channel(turns, head), '${TURN_PREFIX}' .. head)
      end
    end
  end
end
`;
