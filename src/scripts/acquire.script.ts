import { LuaScript } from './lua-script.js';

/**
 * `SET lock token NX PX ttl`, and on success the next fencing token of the key.
 *
 * KEYS: lock key, fencing key. ARGV: token, ttl (ms), fencing key ttl (ms).
 * Returns `{1, fencingToken}` when acquired, `{0, pttl}` when held by someone else.
 *
 * The fencing token is `max(last + 1, Redis server time in µs)`: it only grows while the counter
 * exists, and it still grows after the counter is gone (expired, or Redis restarted empty) as
 * long as the server clock has not gone back. After a failover the new master's clock counts,
 * so tokens keep growing only while the two clocks differ by less than the failover takes.
 * Because of the clock floor the counter may expire, so that unused keys do not stay forever.
 * The counter is read before the lock is set, so that a bad counter value fails the script
 * before it has written anything.
 */
export const ACQUIRE_SCRIPT = new LuaScript(`
if redis.replicate_commands then redis.replicate_commands() end
local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local fence = math.max(last + 1, floor)
  redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
`);
