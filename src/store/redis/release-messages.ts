import type { LockEvent } from '../lock-store.interface.js';

/**
 * How the Redis scripts announce on a lock's channel that the lock is reserved for a queued
 * waiter: this prefix, then the waiter's token. Any other message is a plain release, named by
 * the SHA-1 of the released token (so that RedLock passes each release on once).
 */
export const TURN_PREFIX = 'turn:';

/** A message heard on a lock's channel, as the event it announces. */
export function eventOf(message: string): LockEvent {
  return message.startsWith(TURN_PREFIX)
    ? { type: 'turn', token: message.slice(TURN_PREFIX.length) }
    : { type: 'released', id: message === '' ? undefined : message };
}
