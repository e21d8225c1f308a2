import type { LockEvent } from '../lock-store.interface.js';

/**
 * How the Redis scripts announce that a lock is reserved for a queued waiter, on the turn
 * channel of the instance the waiter's token names (or on the lock's channel for a token that
 * names none, see `turnChannelOf`): this prefix, then the waiter's token (anything after a
 * space, which no token holds, is left for older releases to read). Any other message is a plain
 * release, named by the SHA-1 of the released token (so that RedLock passes each release on
 * once).
 */
export const TURN_PREFIX = 'turn:';

/** A message heard on a lock's channel or on a turn channel, as the event it announces. */
export function eventOf(message: string): LockEvent {
  if (!message.startsWith(TURN_PREFIX)) {
    return { type: 'released', id: message === '' ? undefined : message };
  }
  const [token] = message.slice(TURN_PREFIX.length).split(' ', 1);
  return { type: 'turn', token };
}
