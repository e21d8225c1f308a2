import { sideKeyOf } from '../redis-keys.js';
import type { TransferOutcome } from '../../lock-store.interface.js';
import { LuaScript } from './lua-script.js';
import { integerOf } from './script-reply.js';
import { SHARED_LUA } from './shared/shared.lua.js';

/**
 * The keys of {@link TRANSFER_SCRIPT}: the lock key, and the holders and their fencing tokens
 * that a semaphore or read-write lock keeps beside it (see `SHARED_LUA`), all in its slot.
 */
export type TransferKeys = [lock: string, holders: string, tenures: string];

/** The arguments of {@link TRANSFER_SCRIPT} (ARGV), durations in ms. */
export type TransferArgs = [token: string, newToken: string, ttl: number, fencingToken: number];

/** The keys of {@link TRANSFER_SCRIPT} for lock key `key`. */
export function transferKeysOf(key: string): TransferKeys {
  return [key, sideKeyOf(key, 'holders'), sideKeyOf(key, 'tenures')];
}

/** The script's replies, by the integer it returns. */
const OUTCOMES: readonly TransferOutcome[] = ['gone', 'transferred', 'fence-mismatch'];

/**
 * `LockStore.transfer`, for every kind in one script: moves the hold of a token to a new one,
 * for ttl from now, keeping its fencing token, if the key holds the token with the fencing
 * token given. A mutex's value (see `FENCE_LUA`) keeps all that follows its token, the fencing
 * token and the queue mark, so that a release still looks at the queue. A semaphore permit or
 * read-write share moves within the holders and their fencing tokens, whose marker then lives
 * as long as the longest holder (see `sync`); a permit that is only reserved for a waiter has no
 * fencing token yet, and is not moved. The new token is of the same kind (its tag is the old
 * one's), so it takes the same permits.
 *
 * The same transfer sent again (a client resends a command whose answer was lost with its
 * connection) finds the hold moved to its new token, which only the adopter knows, with the
 * same fencing token: that is the move done, and it answers so, writing nothing.
 *
 * KEYS: see {@link TransferKeys}. ARGV: see {@link TransferArgs}. Returns 1 when the hold moved
 * (now or by the same transfer before), 0 when the key no longer holds the token, 2 when it
 * holds it with another fencing token; nothing is written unless it returns 1.
 */
export const TRANSFER_SCRIPT = new LuaScript<TransferKeys, TransferArgs, TransferOutcome>(
  `${SHARED_LUA}
local token, new_token, ttl, fence = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if not string.match(token, '^[srw][%dx]*%.') then
  local value = redis.call('GET', KEYS[1])
  local value_fence = tonumber(string.match(value or '', '^%S+ (%d+)') or '-1')
  if not holds(value, token) then
    if holds(value, new_token) and value_fence == fence then return 1 end
    return 0
  end
  if value_fence ~= fence then return 2 end
  redis.call('SET', KEYS[1], new_token .. string.sub(value, #token + 1), 'PX', ttl)
  return 1
end
local marker = marker_of(token)
if redis.call('GET', KEYS[1]) ~= marker then return 0 end
local now = now_ms()
local recorded = redis.call('HGET', KEYS[3], token)
if tonumber(redis.call('ZSCORE', KEYS[2], token) or '0') <= now or not recorded then
  local moved = redis.call('HGET', KEYS[3], new_token)
  local live = tonumber(redis.call('ZSCORE', KEYS[2], new_token) or '0') > now
  if live and tonumber(moved or '-1') == fence then return 1 end
  return 0
end
if tonumber(recorded) ~= fence then return 2 end
redis.call('ZREM', KEYS[2], token)
redis.call('HDEL', KEYS[3], token)
redis.call('ZADD', KEYS[2], now + ttl, new_token)
redis.call('HSET', KEYS[3], new_token, recorded)
sync(KEYS[1], KEYS[2], KEYS[3], marker, now)
return 1
`,
  (reply) => {
    const outcome = OUTCOMES[integerOf(reply)];
    if (outcome === undefined) throw new TypeError(`Redis answered ${String(reply)} to a transfer`);
    return outcome;
  },
);
