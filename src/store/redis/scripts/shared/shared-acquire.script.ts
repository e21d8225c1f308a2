import type { SharedScriptKeys } from '../../redis-keys.js';
import type { AcquireAttempt } from '../../../lock-store.interface.js';
import type { AcquireArgs } from '../acquire.script.js';
import { LuaScript } from '../lua-script.js';
import { entriesOf, integerOf } from '../script-reply.js';
import { SHARED_LUA } from './shared.lua.js';

/**
 * What an attempt on a semaphore or read-write lock found: the attempt's outcome, or, when the
 * key is held as another kind, what the key holds (a mutex's token, or another kind's marker).
 */
export type SharedAttempt = AcquireAttempt | { acquired: false; heldAs: string };

/**
 * One attempt for a semaphore permit or a read or write share: takes a permit if the caller fits
 * beside the holders and nobody waits before it, and otherwise (when asked to) puts the caller
 * in the queue or renews its place there. Free permits go to the queue first (see `grant_line`).
 * A permit that holds the caller's token already (reserved for it by a handover) is the
 * caller's from this request on: its expiry starts again and it gets its fencing token here, as
 * with the mutex (see `ACQUIRE_SCRIPT`).
 *
 * KEYS: see {@link SHARED_LUA}. ARGV: as the mutex's attempt ({@link AcquireArgs}), the token
 * tagged with its kind. Returns `{1, fencingToken}` when the caller holds a permit, `{0, pttl}`
 * when it does not (pttl: the soonest a holder's permit expires, or -1), with a third entry
 * when every holder is a throttle whose window is open (what is left of the soonest to close,
 * see `sharedWindowLeft`), `{2, value}` when the key is held as another kind.
 */
export const SHARED_ACQUIRE_SCRIPT = new LuaScript<SharedScriptKeys, AcquireArgs, SharedAttempt>(
  `${SHARED_LUA}
local token, ttl = ARGV[1], tonumber(ARGV[2])
local marker, limit = marker_of(token), limit_of(token)
local current = redis.call('GET', KEYS[1])
if current and current ~= marker then
  return {2, current}
end
local now = now_ms()
drop_expired(now)
local fence = false
if redis.call('ZSCORE', KEYS[5], token) then
  fence = hold_permit(token, now + ttl)
else
  local waiting = redis.call('EXISTS', KEYS[3]) == 1
  if waiting then
    fence = grant_line(ARGV[4], ARGV[5], token, marker, limit, now)
    waiting = live_head() ~= nil
  end
  if not fence and not waiting and fits(KEYS[5], token, limit) then
    fence = hold_permit(token, now + ttl)
  end
end
if fence then
  sync(KEYS[1], KEYS[5], KEYS[7], marker, now)
  return {1, fence}
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[3], 'NX', server_time_us(), token)
  redis.call('HSET', KEYS[4], token, string.format('%.0f %d', now + QUEUE_LEASE, ttl))
  redis.call('PEXPIRE', KEYS[3], 2 * QUEUE_LEASE)
  redis.call('PEXPIRE', KEYS[4], 2 * QUEUE_LEASE)
end
sync(KEYS[1], KEYS[5], KEYS[7], marker, now)
local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')[2]
local pttl = first and (tonumber(first) - now) or -1
local window = -1
for _, holder in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do
  local left = hold_for_of(holder)
    and window_left(holder, tonumber(redis.call('HGET', KEYS[7], holder) or '')) or -1
  if left < 0 then
    window = -1
    break
  end
  if window < 0 or left < window then window = left end
end
if window > 0 then return {0, pttl, window} end
return {0, pttl}
`,
  (reply) => {
    const [outcome, value, windowLeft] = entriesOf(reply, 2, 3);
    switch (integerOf(outcome)) {
      case 1:
        return { acquired: true, fencingToken: integerOf(value) };
      case 2:
        return { acquired: false, heldAs: String(value) };
      default:
        return windowLeft === undefined
          ? { acquired: false, pttl: integerOf(value) }
          : { acquired: false, pttl: integerOf(value), windowLeft: integerOf(windowLeft) };
    }
  },
);
