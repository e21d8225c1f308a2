import type { SharedScriptKeys } from '../../redis-keys.js';
import type { ReleaseOutcome } from '../../../lock-store.interface.js';
import { LuaScript } from '../lua-script.js';
import type { ReleaseArgs } from '../release.script.js';
import { integerOf, pairOf } from '../script-reply.js';
import { SHARED_LUA } from './shared.lua.js';

/**
 * Gives back a semaphore permit or a read or write share. The freed room goes to the queue in
 * order (see `grant_line`), the releaser's successor first if it is next; otherwise, when asked
 * to, a message wakes the waiters that do not queue (fair mode off), as the mutex's release
 * does. When the last holder leaves and mutex callers queue for the key, they are woken too. A
 * caller that held no permit leaves the queue (a waiter that gives up).
 *
 * KEYS: see {@link SHARED_LUA}. ARGV: as the mutex's release ({@link ReleaseArgs}). Returns
 * `{1, fencingToken}` when the permit was the caller's and the successor got one, `{1, 0}` when
 * it was the caller's, `{0, 0}` when it was not.
 */
export const SHARED_RELEASE_SCRIPT = new LuaScript<SharedScriptKeys, ReleaseArgs, ReleaseOutcome>(
  `${SHARED_LUA}
local token = ARGV[1]
local marker = marker_of(token)
if redis.call('GET', KEYS[1]) ~= marker then
  leave_queue(token)
  return {0, 0}
end
local now = now_ms()
drop_expired(now)
if redis.call('ZREM', KEYS[5], token) == 0 then
  leave_queue(token)
  sync(KEYS[1], KEYS[5], KEYS[7], marker, now)
  return {0, 0}
end
redis.call('HDEL', KEYS[7], token)
local granted = redis.call('EXISTS', KEYS[3]) == 1
  and grant_line(ARGV[3], ARGV[5], ARGV[4], marker, limit_of(token), now)
local held = sync(KEYS[1], KEYS[5], KEYS[7], marker, now)
if (ARGV[2] == '1' and not granted) or (not held and redis.call('EXISTS', KEYS[6]) == 1) then
  redis.call(ARGV[3], KEYS[1], redis.sha1hex(token))
end
return {1, granted or 0}
`,
  (reply) => {
    const [released, fencingToken] = pairOf(reply).map(integerOf);
    return fencingToken > 0
      ? { released: true, successorFencingToken: fencingToken }
      : { released: released === 1 };
  },
);
