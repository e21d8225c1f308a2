import { LuaScript } from './lua-script.js';

/**
 * Compare-and-delete: deletes the lock only while it still holds our token, then publishes on
 * the lock's channel so that waiters wake up.
 *
 * KEYS: lock key. ARGV: token, release channel. Returns 1 when deleted, 0 when it was not ours.
 */
export const RELEASE_SCRIPT = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '')
  return 1
end
return 0
`);
