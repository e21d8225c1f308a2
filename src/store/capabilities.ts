import { LockError, LockOptionsError } from '../lock.errors.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import type { LockStore } from './lock-store.interface.js';

/** What a lock store can do, as it declares it; the library refuses the rest in one place. */
export interface LockStoreCapabilities {
  /** The backend, as messages name it. */
  readonly backend: string;
  /**
   * Waiters hold places in a line that the store keeps, so that they are served first come,
   * first served across processes.
   */
  readonly queueing: boolean;
  /**
   * A lock can be left to end a set time after it was taken (`holdFor`): for every kind, or
   * (`'mutex'`) for a mutex only, where a window closes the whole key.
   */
  readonly throttle: boolean | 'mutex';
  /** Counting semaphores (`limit`) and read-write locks (`mode`). */
  readonly kinds: boolean;
  /**
   * How a hold stays alive: a TTL that the watchdog renews (and that may also run out on its
   * own, `watchdog: false`), or the holder's session with the store.
   */
  readonly keepAlive: 'ttl' | 'session';
  /**
   * `false` when the store cannot hold leader elections (`@Leader`), which a store can unless
   * it says so.
   */
  readonly leadership?: false;
  /** `false` when a semaphore's holder can take only one permit (`permits` above 1 refused). */
  readonly permits?: false;
  /**
   * A held lock can be handed to another process (`Lock.handOff`, `LockService.adopt`): its
   * token alone proves ownership, so whoever has it can renew and release it, or move it to a
   * token of its own (see `LockStore.transfer`).
   */
  readonly handles: boolean;
  /** Why the store lacks what it lacks, for the error that refuses it. */
  readonly why?: Partial<
    Record<
      'throttle' | 'kinds' | 'keepAlive' | 'leadership' | 'permits' | 'handles' | Facet,
      string
    >
  >;
}

/** The methods of {@link LockStore} that a store may lack, and the calls that need them. */
export type Facet = 'isLocked' | 'inspect' | 'forceRelease' | 'writeFenced';

/**
 * The store's method `facet`, bound to it, for the call that needs it (`call`, as the error
 * names it: `LockService.inspect`, say).
 * @throws LockError when the store has no such method, naming the call and the backend,
 *   followed by the store's reason (`capabilities.why`) when it gives one
 */
export function facetOf<F extends Facet>(
  store: LockStore,
  facet: F,
  call = `LockService.${facet}`,
): NonNullable<LockStore[F]> {
  const method = store[facet] as ((...args: never[]) => unknown) | undefined;
  if (typeof method === 'function') return method.bind(store) as NonNullable<LockStore[F]>;
  const { backend, why = {} } = store.capabilities;
  throw new LockError(`${call}: nothing with ${backend}${why[facet] ?? ''}`);
}

/** What {@link refuseUnsupported} checks: an acquisition's options, or the hand-off of a lock. */
export type SupportRequest = ResolvedAcquireOptions & {
  /** The call hands a lock off or adopts one (its name: `handOff` or `adopt`). */
  readonly handle?: 'handOff' | 'adopt';
};

/**
 * Refuses, at the call (or at boot for `@WithLock`), an acquisition (or a hand-off) that asks
 * for what the store cannot do.
 * @throws LockOptionsError naming the option and the backend
 */
export function refuseUnsupported(
  options: SupportRequest,
  capabilities: LockStoreCapabilities,
  where?: string,
): void {
  const { backend, why = {} } = capabilities;
  const refuse = (option: string, value: unknown, reason = '') => {
    throw new LockOptionsError(option, value, `nothing with ${backend}${reason}`, where);
  };
  if (options.holdFor !== undefined && !capabilities.throttle) {
    refuse('holdFor', options.holdFor, why.throttle);
  }
  if (
    options.holdFor !== undefined &&
    capabilities.throttle === 'mutex' &&
    (options.mode !== undefined || (options.limit ?? 1) > 1)
  ) {
    refuse('holdFor', options.holdFor, ` beside limit or mode${why.throttle ?? ''}`);
  }
  if (!options.watchdog && capabilities.keepAlive !== 'ttl') {
    refuse('watchdog', false, why.keepAlive);
  }
  if (capabilities.permits === false && (options.permits ?? 1) > 1) {
    refuse('permits', options.permits, why.permits);
  }
  if (options.handle !== undefined && !capabilities.handles) {
    refuse(options.handle, true, why.handles);
  }
  if (!capabilities.kinds) {
    if (options.limit !== undefined) refuse('limit', options.limit, why.kinds);
    if (options.mode !== undefined) refuse('mode', options.mode, why.kinds);
  }
}
