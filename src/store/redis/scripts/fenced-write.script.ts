import type { FencedWriteOutcome } from '../../lock-store.interface.js';
import { LuaScript } from './lua-script.js';
import { integerOf, pairOf } from './script-reply.js';

/** The arguments of {@link FENCED_WRITE_SCRIPT} (ARGV): ttl in ms, 0 for none. */
export type FencedWriteArgs = [fencingToken: number, value: string, ttl: number];

/**
 * The guarded write: sets the resource key to the value only if the presented fencing token is
 * at least the highest one a write to this resource has presented, and records it. Equal is
 * accepted, so that one holder may write more than once.
 *
 * KEYS: resource key, its guard (the highest fencing token seen). ARGV: fencing token, value,
 * ttl of the value in ms (0 for none). Returns `{1, token}` when written, `{0, highest seen}`
 * when refused.
 */
export const FENCED_WRITE_SCRIPT = new LuaScript<
  [resource: string, guard: string],
  FencedWriteArgs,
  FencedWriteOutcome
>(
  `
local seen = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if tonumber(ARGV[1]) < seen then
  return {0, string.format('%.0f', seen)}
end
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
redis.call('SET', KEYS[2], ARGV[1])
return {1, ARGV[1]}
`,
  (reply) => {
    const [written, highest] = pairOf(reply);
    return integerOf(written) === 1
      ? { written: true }
      : { written: false, highestSeen: integerOf(highest) };
  },
);
