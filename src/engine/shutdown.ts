import type { LockStore } from '../store/lock-store.interface.js';
import { InFlight, within } from './in-flight.js';
import type { Waiter } from './waiter.js';
import type { Waiters } from './waiters.js';
import type { Watchdog } from './watchdog.js';

/** How long shutdown waits for the release of the locks still held. */
const SHUTDOWN_RELEASE_TIMEOUT = 2_000;

/**
 * Where shutdown stands, which every acquisition asks before it takes a lock or waits for one:
 * `draining` lets the work running under held locks finish (only that work may still take
 * locks), `closed` takes and keeps none.
 */
export class ShutdownGate {
  phase: 'open' | 'draining' | 'closed' = 'open';

  /** Whether a caller may no longer take a lock, nor wait for one. */
  refuses(insideLock: boolean): boolean {
    return this.phase === 'closed' || (this.phase === 'draining' && !insideLock);
  }
}

/** What shutdown works on: the engine's parts. */
export interface ShutdownParts {
  readonly store: LockStore;
  readonly waiters: Waiters;
  readonly watchdog: Watchdog;
  /** Attempts and releases on their way. */
  readonly inFlight: readonly InFlight[];
}

/**
 * Waits, up to `grace` ms, until no lock is held here and nothing is on its way to the store (a
 * first attempt inside locked work may still bring a lock; a release decides how work ended).
 */
export async function drain(parts: ShutdownParts, grace: number): Promise<void> {
  if (grace === 0) return;
  const { watchdog, inFlight } = parts;
  const busy = () => watchdog.size > 0 || inFlight.some((requests) => requests.size > 0);
  const idle = async () => {
    while (busy()) {
      await Promise.all(inFlight.map((requests) => requests.settled()));
      await watchdog.whenEmpty();
    }
  };
  await within(grace, idle());
}

/**
 * Ends everything still going once the grace is over: fails the callers still waiting with the
 * error `refusal` gives each, tells the work still running under a lock that it lost
 * it (`reason`), and releases those locks, after the waiters of this process (`leaving` among
 * them) left the store's queues; all bounded in time.
 */
export async function endAll(
  parts: ShutdownParts,
  refusal: (waiter: Waiter) => Error,
  reason: string,
  leaving: readonly { key: string; token: string }[],
): Promise<void> {
  const { store, waiters, watchdog, inFlight } = parts;
  const waiting = [...leaving, ...waiters.close(refusal)];
  const held = watchdog.stop();
  // Work still runs under these locks: tell it before another process can take them.
  for (const lock of held) lock.markLost(reason);
  const releaseAll = async () => {
    // Leave the queues first, so that no released lock is handed to a waiter of ours.
    await Promise.allSettled(waiting.map(({ key, token }) => store.release(key, token)));
    await Promise.allSettled(held.map((lock) => store.release(lock.key, lock.token)));
  };
  await within(
    SHUTDOWN_RELEASE_TIMEOUT,
    Promise.all([releaseAll(), ...inFlight.map((requests) => requests.settled())]),
  );
}
