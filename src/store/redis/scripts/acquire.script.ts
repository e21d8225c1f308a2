import type { ScriptKeys } from '../redis-keys.js';
import type { AcquireAttempt } from '../../lock-store.interface.js';
import { LuaScript } from './lua-script.js';
import { NEXT_FENCE_LUA } from './fence.lua.js';
import { QUEUE_LUA, type PublishCommand } from './queue.lua.js';
import { entriesOf, integerOf } from './script-reply.js';

/** The arguments of {@link ACQUIRE_SCRIPT} (ARGV), durations in ms. */
export type AcquireArgs = [
  token: string,
  ttl: number,
  queue: 0 | 1,
  publish: PublishCommand,
  turns: string,
];

/**
 * One acquisition attempt: takes the lock if it is free and nobody queues before the caller,
 * and otherwise (when asked to) puts the caller in the queue or renews its place there.
 *
 * KEYS: see {@link QUEUE_LUA}. ARGV: token, ttl (ms), 1 to queue up when the lock is taken (0
 * to just try), publishing command (PUBLISH or SPUBLISH), what the names of the lock's turn
 * channels begin with (see `turnChannelsOf`).
 * Returns `{1, fencingToken}` when the caller holds the lock, `{0, pttl}` when it does not; a
 * refusal by a throttle whose window is open adds what is left of it (`{0, pttl, -1, window}`).
 * A lock that holds
 * the caller's token already (granted to it by a handover that it has not taken up) is the
 * caller's from this request on: its TTL starts again and it gets a new fencing token here, so
 * that the caller's validity counts from a request whose answer proves the lock was its own.
 *
 * With neither the lock nor its queue there, one `EXISTS` tells so, and the attempt takes the
 * lock in one `SET` of its value (see `FENCE_LUA`) after issuing the fencing token. A caller that
 * queues marks the value of the lock it waits for, so that its holder's release looks at the
 * queue.
 *
 * The fencing token is `max(last + 1, Redis server time in µs)`, `last` being the last token of
 * the counter that every lock of the slot shares: it only grows while the counter exists, and
 * it still grows after the counter is gone (expired, or Redis restarted empty) as long as the
 * server clock has not gone back. After a failover the new master's clock counts, so tokens
 * keep growing only while the two clocks differ by less than the failover takes.
 */
export const ACQUIRE_SCRIPT = new LuaScript<ScriptKeys, AcquireArgs, AcquireAttempt>(
  `${NEXT_FENCE_LUA}
local token, ttl = ARGV[1], tonumber(ARGV[2])
local function held(queued)
  local fence = next_fence()
  redis.call('SET', KEYS[1], lock_value(token, fence, queued), 'PX', ttl)
  return {1, fence}
end
if redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  return held(false)
end
${QUEUE_LUA}
local value = redis.call('GET', KEYS[1])
local holder = holder_of(value)
local queued = redis.call('EXISTS', KEYS[3]) == 1
if queued and not holder then
  local head = live_head()
  if not head or head == token then
    leave_queue(token)
    return held(true)
  end
  grant_head(ARGV[4], ARGV[5], '')
  -- The lock is now the head's, marked if anybody else is queued; this caller marks it below.
  holder, value = head, redis.call('GET', KEYS[1])
end
if holder == token then
  return held(queued)
end
if ARGV[3] == '1' then
  local now_us = server_time_us()
  local lease_end = math.floor(now_us / 1000) + QUEUE_LEASE
  redis.call('ZADD', KEYS[3], 'NX', now_us, token)
  redis.call('HSET', KEYS[4], token, string.format('%.0f %d', lease_end, ttl))
  -- Queue keys outlive every lease they hold only by a margin, so none is left forever.
  redis.call('PEXPIRE', KEYS[3], 2 * QUEUE_LEASE)
  redis.call('PEXPIRE', KEYS[4], 2 * QUEUE_LEASE)
  local pttl = redis.call('PTTL', KEYS[1])
  mark_queued(value, pttl)
  local window = window_left(holder, fence_of(value))
  if window > 0 then return {0, pttl, -1, window} end
  return {0, pttl}
end
local window = window_left(holder, fence_of(value))
if window > 0 then return {0, redis.call('PTTL', KEYS[1]), -1, window} end
return {0, redis.call('PTTL', KEYS[1])}
`,
  (reply) => {
    const granted = integerOf(entriesOf(reply, 2, 4)[0]) === 1;
    const entries = entriesOf(reply, 2, granted ? 2 : 4);
    const [acquired, value, , windowLeft] = entries.map(integerOf);
    if (acquired === 1) return { acquired: true, fencingToken: value };
    return {
      acquired: false,
      pttl: value,
      ...(windowLeft !== undefined && { windowLeft }),
    };
  },
);
