import { LuaScript } from './lua-script.js';
import { QUEUE_LUA } from './queue.lua.js';

/**
 * One acquisition attempt: takes the lock if it is free and nobody queues before the caller,
 * and otherwise (when asked to) puts the caller in the queue or renews its place there.
 *
 * KEYS: see {@link QUEUE_LUA}. ARGV: token, ttl (ms), fencing counter ttl (ms), release
 * channel, 1 to queue up when the lock is taken (0 to just try), queue lease (ms), publishing
 * command (PUBLISH or SPUBLISH).
 * Returns `{1, fencingToken}` when the caller holds the lock (also when it was handed to the
 * caller while its answer was on the way: then its TTL starts again from this request, so that
 * the caller's idea of the lock's validity stays on the safe side), `{0, pttl}` when it does
 * not.
 *
 * The fencing token is `max(last + 1, Redis server time in µs)`, `last` being the last token of
 * the counter that every lock of the slot shares: it only grows while the counter exists, and
 * it still grows after the counter is gone (expired, or Redis restarted empty) as long as the
 * server clock has not gone back. After a failover the new master's clock counts, so tokens
 * keep growing only while the two clocks differ by less than the failover takes. Because of the
 * clock floor the counter may expire. A caller that already holds the lock gets the counter's
 * value: at least its own token, and below any later holder's.
 */
export const ACQUIRE_SCRIPT = new LuaScript(`${QUEUE_LUA}
local token, ttl, fence_ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 0 then
  if redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
    return {1, next_fence(math.max(ttl, fence_ttl))}
  end
  if redis.call('GET', KEYS[1]) == token then
    redis.call('PEXPIRE', KEYS[1], ttl)
    return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
  end
else
  local holder = redis.call('GET', KEYS[1])
  if holder == token then
    redis.call('PEXPIRE', KEYS[1], ttl)
    return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
  end
  if not holder then
    local head = live_head()
    if not head or head == token then
      leave_queue(token)
      redis.call('SET', KEYS[1], token, 'PX', ttl)
      return {1, next_fence(math.max(ttl, fence_ttl))}
    end
    grant_head(ARGV[7], ARGV[4], fence_ttl)
  end
end
if ARGV[5] == '1' then
  local now_us = server_time_us()
  local lease_end = math.floor(now_us / 1000) + tonumber(ARGV[6])
  redis.call('ZADD', KEYS[3], 'NX', now_us, token)
  redis.call('HSET', KEYS[4], token, string.format('%.0f %d', lease_end, ttl))
  -- Queue keys outlive every lease they hold only by a margin, so none is left forever.
  redis.call('PEXPIRE', KEYS[3], 2 * tonumber(ARGV[6]))
  redis.call('PEXPIRE', KEYS[4], 2 * tonumber(ARGV[6]))
end
return {0, redis.call('PTTL', KEYS[1])}
`);
