import type { ScriptKeys } from '../redis-keys.js';
import type { ReleaseOutcome } from '../../lock-store.interface.js';
import { LuaScript } from './lua-script.js';
import { NEXT_FENCE_LUA } from './fence.lua.js';
import { QUEUE_LUA, type PublishCommand } from './queue.lua.js';
import { integerOf, pairOf } from './script-reply.js';

/** The arguments of {@link RELEASE_SCRIPT} (ARGV), durations in ms. */
export type ReleaseArgs = [
  token: string,
  announce: 0 | 1,
  publish: PublishCommand,
  successor: string,
  turns: string,
];

/**
 * Compare-and-delete. A deleted lock whose value carries the queue mark (see `FENCE_LUA`) goes
 * straight to the head of the queue if anyone waits there (see `grant_head`); otherwise, when
 * asked to, a message on the lock's channel wakes the waiters that do not queue (fair mode
 * off). That message is the SHA-1 of the released token:
 * it names the release without revealing the token, so that RedLock, which hears one release
 * from every master, can pass it on once. A caller that did not hold the lock leaves the queue
 * (a waiter that gives up).
 *
 * KEYS: see {@link QUEUE_LUA}. ARGV: token, 1 to announce a release that nobody was queued
 * for, publishing command (PUBLISH or SPUBLISH), the releaser's successor (a waiter of its own
 * process, or ''), what the names of the lock's turn channels begin with (see `turnChannelsOf`).
 * Returns `{1, fencingToken}` when the lock was the caller's and went to the successor,
 * `{1, 0}` when it was the caller's, `{0, 0}` when it was not.
 */
export const RELEASE_SCRIPT = new LuaScript<ScriptKeys, ReleaseArgs, ReleaseOutcome>(
  `${NEXT_FENCE_LUA}
local value = redis.call('GET', KEYS[1])
local released = holds(value, ARGV[1])
if released then
  redis.call('DEL', KEYS[1])
  if not queue_marked(value) or redis.call('EXISTS', KEYS[3]) == 0 then
    if ARGV[2] == '1' then redis.call(ARGV[3], KEYS[1], redis.sha1hex(ARGV[1])) end
    return {1, 0}
  end
end
${QUEUE_LUA}
if not released then
  leave_queue(ARGV[1])
  return {0, 0}
end
local granted = grant_head(ARGV[3], ARGV[5], ARGV[4])
if not granted and ARGV[2] == '1' then
  redis.call(ARGV[3], KEYS[1], redis.sha1hex(ARGV[1]))
end
return {1, type(granted) == 'number' and granted or 0}
`,
  (reply) => {
    const [released, fencingToken] = pairOf(reply).map(integerOf);
    return fencingToken > 0
      ? { released: true, successorFencingToken: fencingToken }
      : { released: released === 1 };
  },
);
