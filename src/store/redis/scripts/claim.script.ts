import { FENCE_LUA } from './fence.lua.js';
import { LuaScript } from './lua-script.js';
import { flagOf } from './script-reply.js';

/** The arguments of {@link CLAIM_SCRIPT} (ARGV), durations in ms. */
export type ClaimArgs = [fencingToken: number, token: string, ttl: number];

/**
 * RedLock's writes on single masters beyond the acquisition attempt:
 * - the fencing floor: a lock on N masters carries the highest token its majority issued, and
 *   writing it to a majority of masters means that any later majority, which shares a master with
 *   this one, issues a greater token;
 * - a claim: a holder whose lock a majority confirmed also takes it on a master where it is
 *   missing and free (a contender held the key there when the lock was acquired, or the master
 *   restarted empty), with the same floor, so that the lock survives the loss of any minority.
 *
 * KEYS: lock, fencing counter of its slot. ARGV: fencing token, and for a claim, the lock's
 * token and ttl (ms); an empty token only raises the floor, and a token with ttl 0 raises it and
 * records the fencing token in the value of the lock that token holds here (see `FENCE_LUA`;
 * the lock's fencing token is its majority's highest, not this master's own). RedLock queues
 * nobody, so these values never carry the queue mark.
 * Returns 1, or 0 when the claimed lock was not free.
 */
export const CLAIM_SCRIPT = new LuaScript<[lock: string, fence: string], ClaimArgs, boolean>(
  `${FENCE_LUA}
if ARGV[2] ~= '' and ARGV[3] == '0' then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 and holds(redis.call('GET', KEYS[1]), ARGV[2]) then
    redis.call('SET', KEYS[1], lock_value(ARGV[2], tonumber(ARGV[1]), false), 'PX', pttl)
  end
elseif ARGV[2] ~= '' then
  local value = lock_value(ARGV[2], tonumber(ARGV[1]), false)
  if not redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[3]) then return 0 end
end
local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if tonumber(ARGV[1]) > last then
  set_fence(tonumber(ARGV[1]))
end
return 1
`,
  flagOf,
);
