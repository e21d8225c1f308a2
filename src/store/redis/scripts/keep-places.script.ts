import { LuaScript } from './lua-script.js';
import { integerOf } from './script-reply.js';

/**
 * Renews the queue leases of waiters that still have a place in a key's queue, keeping their
 * places and the TTLs they asked for; a token without a place gets none. For the waiters of
 * one process that wait behind its first one, which alone makes attempts (and so renews its
 * own lease): their places must not lapse as a dead waiter's does, however long they wait.
 *
 * KEYS: [1] the waiters' leases (hash: token to "<lease end, server ms> <ttl>"), the mutex's
 * or the semaphore and read-write line's. ARGV: the queue lease (ms), then the tokens.
 * Returns how many places were renewed.
 */
export const KEEP_PLACES_SCRIPT = new LuaScript<[places: string], (string | number)[], number>(
  `
local t = redis.call('TIME')
local lease_end = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  local ttl = string.match(redis.call('HGET', KEYS[1], ARGV[i]) or '', '^%d+ (%d+)$')
  if ttl then
    redis.call('HSET', KEYS[1], ARGV[i], string.format('%.0f %s', lease_end, ttl))
    renewed = renewed + 1
  end
end
return renewed
`,
  integerOf,
);
