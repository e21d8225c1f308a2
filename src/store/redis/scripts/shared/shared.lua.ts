import { HANDOVER_PREFIX } from '../../../lock-store.interface.js';
import { NEXT_FENCE_LUA } from '../fence.lua.js';
import { QUEUE_LUA } from '../queue.lua.js';

/**
 * Lua shared by the semaphore and read-write scripts, on top of the mutex's queue helpers
 * ({@link QUEUE_LUA}: fencing tokens, the waiters' leases), which they use on queue keys of
 * their own.
 *
 * KEYS, in the acquire and release scripts: [1] lock, [2] fencing counter of its slot, [3] queue
 * (zset: waiter token by arrival in µs), [4] waiters (hash: token to "<lease end, server ms> <ttl>"),
 * [5] holders (zset: token by expiry, server ms), [6] the mutex's queue of the same key.
 *
 * While anybody holds a permit (or one is reserved for a waiter), the lock key holds the kind's
 * marker (`#s<limit>` or `#rw`), with the TTL of the longest-lived holder: a mutex caller then
 * finds the key taken and waits, `isLocked` sees it, and a caller of another kind or limit learns
 * what the key is held as. Each holder's own expiry is its score, so a holder that stops renewing
 * drops out at its TTL while the others stay. A token's tag tells its kind (`s<limit>.`, `r.`,
 * `w.`), for holders and waiters alike.
 */
export const SHARED_LUA = `${NEXT_FENCE_LUA}${QUEUE_LUA}
local function kind_of(token)
  return string.sub(token, 1, 1)
end

local function marker_of(token)
  local limit = string.match(token, '^s(%d+)%.')
  return limit and ('#s' .. limit) or '#rw'
end

local function limit_of(token)
  return tonumber(string.match(token, '^s(%d+)%.') or '0')
end

local function now_ms()
  return math.floor(server_time_us() / 1000)
end

-- Whether the caller of token may hold a permit beside the holders (expired ones dropped).
local function fits(holders, token, limit)
  local n = redis.call('ZCARD', holders)
  local kind = kind_of(token)
  if kind == 's' then return n < limit end
  if kind == 'w' then return n == 0 end
  return n ~= 1 or kind_of(redis.call('ZRANGE', holders, 0, 0)[1]) ~= 'w'
end

-- Keeps the marker and the holders alive until the last holder's expiry, or deletes both when
-- nobody holds; returns whether anybody does.
local function sync(lock, holders, marker, now)
  local last = redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')[2]
  if not last then
    redis.call('DEL', lock, holders)
    return false
  end
  local ms = math.max(1, tonumber(last) - now)
  redis.call('SET', lock, marker, 'PX', ms)
  redis.call('PEXPIRE', holders, ms)
  return true
end

-- Gives free permits to the longest-waiting live waiters, in order, for as long as the next one
-- fits (a writer stops the readers behind it): to the successor its releaser named (a caller
-- of the releaser's own process), its permit at once with its whole TTL and its fencing token,
-- which is returned; to anybody else, a permit reserved for the handover lease and announced.
-- A waiter of another kind leaves the line; its next attempt tells it why.
local function grant_line(publish, successor, marker, limit, now)
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
        redis.call('ZADD', KEYS[5], now + ttl, head)
        fence = next_fence()
      else
        redis.call('ZADD', KEYS[5], now + math.min(ttl, HANDOVER_LEASE), head)
        redis.call(publish, KEYS[1], '${HANDOVER_PREFIX}' .. head)
      end
    end
  end
end
`;
