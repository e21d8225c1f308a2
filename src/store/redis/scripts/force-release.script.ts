import type { ScriptKeys } from '../redis-keys.js';
import { LuaScript } from './lua-script.js';
import { NEXT_FENCE_LUA } from './fence.lua.js';
import { QUEUE_LUA, type PublishCommand } from './queue.lua.js';
import { integerOf, pairOf } from './script-reply.js';

/**
 * The arguments of the force-release scripts (ARGV): the publishing command, and what the names
 * of the lock's turn channels begin with (see `turnChannelsOf`).
 */
export type ForceReleaseArgs = [publish: PublishCommand, turns: string];

/**
 * What a forced release did: how many holders it evicted, or, when the key is held as another
 * kind than the script's (a mutex's script found a kind's marker, or the other way round), what
 * the key holds, for the other script to run.
 */
export type ForceReleaseOutcome = { evicted: number } | { heldAs: string };

/** Reads `{0|1, evicted}` or `{2, value}`. */
export function forceReleaseOutcomeOf(reply: unknown): ForceReleaseOutcome {
  const [outcome, value] = pairOf(reply);
  return integerOf(outcome) === 2 ? { heldAs: String(value) } : { evicted: integerOf(value) };
}

/**
 * Deletes a mutex whoever holds it (`LockService.forceRelease`), and gives it
 * to the head of the queue as a release does (see `grant_head`); with nobody queued, a release
 * message wakes the waiters that race for it. The evicted holder's next renewal or release
 * finds its token gone.
 *
 * KEYS: see {@link QUEUE_LUA}. ARGV: see {@link ForceReleaseArgs}. Returns `{1, 1}` when a
 * holder was evicted, `{0, 0}` when the key was free, `{2, marker}` when it is held as a
 * semaphore or read-write lock.
 */
export const FORCE_RELEASE_SCRIPT = new LuaScript<
  ScriptKeys,
  ForceReleaseArgs,
  ForceReleaseOutcome
>(
  `${NEXT_FENCE_LUA}
local holder = redis.call('GET', KEYS[1])
if not holder then return {0, 0} end
if string.sub(holder, 1, 1) == '#' then return {2, holder} end
redis.call('DEL', KEYS[1])
${QUEUE_LUA}
if not grant_head(ARGV[1], ARGV[2], '') then
  redis.call(ARGV[1], KEYS[1], redis.sha1hex(holder_of(holder)))
end
return {1, 1}
`,
  forceReleaseOutcomeOf,
);
