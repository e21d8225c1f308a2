import type { StoredHold, StoredLock } from '../../lock-store.interface.js';
import { LuaScript } from './lua-script.js';
import { integerOf, listOf } from './script-reply.js';

/** The keys of {@link INSPECT_SCRIPT}: a lock key and everything kept beside it. */
export type InspectKeys = [
  lock: string,
  queue: string,
  waiters: string,
  holders: string,
  tenures: string,
  line: string,
  places: string,
];

/**
 * Reads who holds a key and how many wait, in one atomic look that writes nothing (with only
 * the commands the other scripts use, for the ACL of docs/acl.md): the mutex's holder with its
 * fencing token (in the lock's value, see `FENCE_LUA`), or the live holders of a semaphore or
 * read-write lock with their fencing tokens; and the waiters of both lines whose lease still
 * runs.
 *
 * KEYS: see {@link InspectKeys}. Returns `{lock value or '', waiting, token, ttl, fence, …}`,
 * a triple per holder, fence 0 where none is recorded (a lock reserved for a waiter).
 */
export const INSPECT_SCRIPT = new LuaScript<InspectKeys, [], StoredLock>(
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function live(queue, places)
  local n = 0
  for _, token in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
    local lease_end = string.match(redis.call('HGET', places, token) or '', '^(%d+) ')
    if tonumber(lease_end or '0') > now then n = n + 1 end
  end
  return n
end
local value = redis.call('GET', KEYS[1]) or ''
local reply = {value, live(KEYS[2], KEYS[3]) + live(KEYS[6], KEYS[7])}
if string.sub(value, 1, 1) == '#' then
  local held = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
  for i = 1, #held, 2 do
    if tonumber(held[i + 1]) > now then
      reply[#reply + 1] = held[i]
      reply[#reply + 1] = tonumber(held[i + 1]) - now
      reply[#reply + 1] = redis.call('HGET', KEYS[5], held[i]) or '0'
    end
  end
elseif value ~= '' then
  local token, fence = string.match(value, '^(%S+) (%d+)')
  reply[#reply + 1] = token or value
  reply[#reply + 1] = redis.call('PTTL', KEYS[1])
  reply[#reply + 1] = fence or '0'
end
return reply
`,
  (reply) => {
    const [, waiting, ...held] = listOf(reply);
    if (held.length % 3 !== 0) throw new TypeError(`Redis answered ${held.length} holder fields`);
    const holders: StoredHold[] = [];
    for (let i = 0; i < held.length; i += 3) {
      const fencingToken = integerOf(held[i + 2]);
      holders.push({
        token: String(held[i]),
        ttlMs: integerOf(held[i + 1]),
        ...(fencingToken > 0 ? { fencingToken } : {}),
      });
    }
    return { holders, waiting: integerOf(waiting) };
  },
);
