import type { Lock } from '../../src/lock.js';
import type { Place } from './world.js';

/** The kind of a key, as every caller of the key asks for it. */
export type KeyKind =
  { type: 'mutex'; throttle?: boolean } | { type: 'semaphore'; limit: number } | { type: 'rw' };

/** One caller's hold, from when its call returned the lock until its work ended. */
export interface Holding {
  readonly caller: string;
  readonly place: Place;
  readonly key: string;
  readonly lock: Lock;
  readonly permits: number;
  readonly mode?: 'read' | 'write';
  /** Taken over from a holder that handed it off: it keeps that holder's fencing token. */
  readonly adopted?: boolean;
}

/** One call that may wait: when it started, and when it got its lock or failed. */
export interface Call {
  readonly caller: string;
  readonly place: Place;
  readonly key: string;
  readonly startedAt: number;
  readonly waitTimeout: number;
  settledAt?: number;
}

/** The first invariant a run broke. */
export interface Violation {
  invariant: string;
  detail: string;
  at: number;
}
