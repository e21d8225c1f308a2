import { LuaScript } from './lua-script.js';
import { QUEUE_LUA } from './queue.lua.js';

/**
 * Compare-and-delete, and the caller leaves the queue if it stood in it (a waiter that gives
 * up). A deleted lock goes straight to the head of the queue, if anyone waits there; otherwise
 * an empty message on the lock's channel wakes the waiters that do not queue.
 *
 * KEYS: see {@link QUEUE_LUA}. ARGV: token, release channel, fencing counter ttl (ms).
 * Returns 1 when the lock was the caller's and is released, 0 when it was not.
 */
export const RELEASE_SCRIPT = new LuaScript(`${QUEUE_LUA}
leave_queue(ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if not grant_head(ARGV[2], tonumber(ARGV[3])) then
  redis.call('PUBLISH', ARGV[2], '')
end
return 1
`);
