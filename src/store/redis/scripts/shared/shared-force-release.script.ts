import type { SharedScriptKeys } from '../../redis-keys.js';
import {
  forceReleaseOutcomeOf,
  type ForceReleaseArgs,
  type ForceReleaseOutcome,
} from '../force-release.script.js';
import { LuaScript } from '../lua-script.js';
import { SHARED_LUA } from './shared.lua.js';

/**
 * Evicts every holder of a semaphore or read-write lock (`LockService.forceRelease`), with their
 * fencing tokens, and gives the freed permits to the line in order, as a release does (see
 * `grant_line`); a release message then wakes the waiters that race for them, and the mutex
 * callers queued for the key.
 *
 * KEYS: see {@link SHARED_LUA}. ARGV: see {@link ForceReleaseArgs}. Returns `{1, evicted}`,
 * `{0, 0}` when the key was free, `{2, value}` when it is held as a mutex.
 */
export const SHARED_FORCE_RELEASE_SCRIPT = new LuaScript<
  SharedScriptKeys,
  ForceReleaseArgs,
  ForceReleaseOutcome
>(
  `${SHARED_LUA}
local marker = redis.call('GET', KEYS[1])
if not marker then return {0, 0} end
if string.sub(marker, 1, 1) ~= '#' then return {2, marker} end
local now = now_ms()
drop_expired(now)
local evicted = redis.call('ZCARD', KEYS[5])
redis.call('DEL', KEYS[5], KEYS[7])
if redis.call('EXISTS', KEYS[3]) == 1 then
  grant_line(ARGV[1], ARGV[2], '', marker, tonumber(string.match(marker, '^#s(%d+)$') or '0'), now)
end
sync(KEYS[1], KEYS[5], KEYS[7], marker, now)
redis.call(ARGV[1], KEYS[1], redis.sha1hex(marker .. string.format('%.0f', now)))
return {1, evicted}
`,
  forceReleaseOutcomeOf,
);
