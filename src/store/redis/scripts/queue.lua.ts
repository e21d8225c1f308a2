import { HANDOVER_LEASE, QUEUE_LEASE } from '../../lock-store.interface.js';
import { TURN_PREFIX } from '../release-messages.js';

/**
 * Lua shared by the acquire and release scripts: the queue of waiters. It comes after the
 * scripts' path for a key nobody queues for, so that the common case does not even define its
 * functions, and after `NEXT_FENCE_LUA` (fence.lua.ts), whose `next_fence` it uses.
 *
 * KEYS, in both scripts: [1] lock, [2] fencing counter of its slot, [3] queue (zset: waiter
 * token by arrival time in µs), [4] waiters (hash: waiter token to "<lease end, server ms>
 * <ttl it asked for>"). The semaphore and read-write scripts use the queue on keys of their
 * own but never call `grant_head` or `mark_queued`, which write a mutex's lock value.
 *
 * A queued waiter renews its lease each time it checks in; one that stops checking in (its
 * process died) is dropped when it reaches the head with its lease run out, so it cannot block
 * the line. When the lock is released, or found free while waiters are queued, it is granted
 * to the longest-waiting live waiter with a fencing token, for the handover lease only (at most
 * the waiter's TTL), and announced as a {@link TURN_PREFIX} message naming the waiter, on the
 * turn channel of the instance the waiter's token names (see `turn_channel`), so that only the
 * process whose caller is next wakes. The notice proves nothing by itself, as it may come late:
 * it only wakes the waiter, whose next attempt, which finds its token, takes the lock with a TTL
 * and fencing token of its own. A waiter that died, or whose notice comes late, costs the others the handover lease, or
 * the wait for their next fallback re-check if that ends later (they do not hear the grant).
 * Every channel a script publishes on lies in the lock's slot, so that on a Cluster the message
 * can go out with SPUBLISH (the scripts take the publishing command as an argument, and the
 * beginning of the turn channels' names, see `turnChannelsOf`). The leases are constants of the
 * library, written into the script rather than sent with every call. With nobody queued, an
 * acquisition looks at the queue in the `EXISTS` that finds the lock free, and a release whose
 * lock value has no queue mark (see `FENCE_LUA`) does not look at it at all.
 *
 * Every write of a mutex's value while its queue exists carries the mark, and so does the value
 * of a lock a waiter queues for, in the script that queues it: a holder's release sees the mark
 * whenever somebody queued during its tenure. Should a mark be missing all the same (a value
 * written by another writer, say), the release leaves the queue as it is and deletes the lock;
 * the head's next attempt, at its fallback re-check (within about a second), or a newcomer's,
 * finds the queue there and takes or reserves the lock for the head, and newcomers queue
 * behind it: a missing mark costs the head that wait, never its place, and never exclusion.
 */
export const QUEUE_LUA = `
local QUEUE_LEASE, HANDOVER_LEASE = ${QUEUE_LEASE}, ${HANDOVER_LEASE}

local function leave_queue(token)
  redis.call('ZREM', KEYS[3], token)
  redis.call('HDEL', KEYS[4], token)
end

-- The longest-waiting waiter whose lease still runs, and its TTL; drops dead ones before it.
local function live_head()
  local now_ms
  while true do
    local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not head then return nil end
    local lease_end, ttl = string.match(redis.call('HGET', KEYS[4], head) or '', '^(%d+) (%d+)$')
    now_ms = now_ms or math.floor(server_time_us() / 1000)
    if lease_end and tonumber(lease_end) > now_ms then return head, tonumber(ttl) end
    leave_queue(head)
  end
end

-- The channel that announces the turn of token: the turn channel of the instance its owner mark
-- (from its first "@" on) names, which turns begins the name of, or the lock's own channel for a
-- token without a mark (a caller's own token, a client that marks none), where every process
-- that waits for the lock hears it.
local function turn_channel(turns, token)
  local at = string.find(token, '@', 1, true)
  if not at then return KEYS[1] end
  return turns .. string.sub(token, at)
end

-- Takes the head of the queue out of it, if there is one, and grants it the free lock with a
-- fencing token: to the successor its releaser named (a caller of the releaser's own process)
-- with its whole TTL, the reply carrying the fencing token; to anybody else for the handover
-- lease only, announced as its turn. Returns false when nobody waits, true or the
-- successor's fencing token.
local function grant_head(publish, turns, successor)
  local head, ttl = live_head()
  if not head then return false end
  leave_queue(head)
  local fence = next_fence()
  local value = lock_value(head, fence, redis.call('EXISTS', KEYS[3]) == 1)
  if head == successor then
    redis.call('SET', KEYS[1], value, 'PX', ttl)
    return fence
  end
  redis.call('SET', KEYS[1], value, 'PX', math.min(ttl, HANDOVER_LEASE))
  redis.call(publish, turn_channel(turns, head), '${TURN_PREFIX}' .. head)
  return true
end

-- Marks the mutex a waiter queues for (see FENCE_LUA), whose PTTL is given (SET … KEEPTTL
-- would need Redis 6); a kind's marker stays as it is.
local function mark_queued(value, pttl)
  if value and pttl > 0 and not queue_marked(value) and string.byte(value, 1) ~= 35 then
    redis.call('SET', KEYS[1], value .. ' +', 'PX', pttl)
  end
end
`;

/** The command the scripts publish release messages with: sharded on a Cluster that has it. */
export type PublishCommand = 'PUBLISH' | 'SPUBLISH';
