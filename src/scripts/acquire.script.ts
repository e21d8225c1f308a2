import { LuaScript } from './lua-script.js';

/**
 * `SET lock token NX PX ttl`, and on success the next fencing token of the key.
 *
 * KEYS: lock key, fencing key. ARGV: token, ttl (ms), fencing key ttl (ms).
 * Returns `{1, fencingToken}` when acquired, `{0, pttl}` when held by someone else.
 *
 * The fencing token is `max(last + 1, Redis server time in µs)`: it only grows while the counter
 * exists, and it still grows after the counter is gone (expired, Redis restarted empty, failover
 * to a replica that never saw it) as long as the server clock has not gone back. That is why
 * the counter may expire, so that keys that are no longer used do not stay in Redis forever.
 */
export const ACQUIRE_SCRIPT = new LuaScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  local fence = math.max(last + 1, floor)
  redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
`);
