import type { LockId } from '../keys/lock-keys.js';
import { LockNotAcquiredError } from '../lock.errors.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';

/** How an acquisition ended, as `lock.acquire.duration` and the `lock.acquire` span say it. */
export type AcquireOutcome = 'acquired' | 'busy' | 'timeout' | 'throttled' | 'aborted' | 'error';

/** How a hold ended, as `lock.hold.duration` says it. */
export type HoldEnd = 'released' | 'lost';

/**
 * What the engine tells telemetry about one lock, from the call that asks for it to the end of
 * its hold: made when the acquisition starts, and carried by the lock it brings. Every method
 * swallows its own failures, so that telemetry never fails a lock call.
 */
export interface LockProbe {
  /**
   * Runs a store call of the acquisition inside its span's context, so that the spans of an
   * instrumented Redis or ZooKeeper client nest under `lock.acquire`.
   */
  within<T>(call: () => T): T;
  /** The caller joined the waiting room (`lock.waiting` counts it until it settles). */
  waiting(): void;
  /**
   * The acquisition settled: with `acquired` (and the lock's fencing token), the hold begins
   * (`lock.held`); with `error`, `error` is what the caller got.
   */
  settled(outcome: AcquireOutcome, fencingToken?: number, error?: unknown): void;
  /** The hold ended: counted once, whichever of its ends comes first. */
  ended(end: HoldEnd): void;
  /** Runs the release in a `lock.release` span; `true` from `release` means it was ours. */
  traceRelease(release: () => Promise<boolean>): Promise<boolean>;
}

/** Where the engine reports to: metrics and traces, or nothing. */
export interface LockTelemetry {
  /** A probe for an acquisition that starts now; `undefined` when nothing is recorded. */
  startAcquire(id: LockId, options: ResolvedAcquireOptions): LockProbe | undefined;
}

/** Records nothing, at the cost of one call per acquisition. */
export const NO_TELEMETRY: LockTelemetry = { startAcquire: () => undefined };

/**
 * The `lock.name` of a lock: the `label` option, else the `@WithLock` template, else the key
 * with its last `:`-separated part replaced by `*` (`order:42` → `order:*`; a key without `:`
 * → `*`), so that ids in keys do not become one time series each.
 */
export function lockNameOf(id: LockId, options: ResolvedAcquireOptions): string {
  const given = options.label ?? id.label;
  if (given !== undefined) return given;
  const end = id.name.lastIndexOf(':');
  return end < 0 ? '*' : `${id.name.slice(0, end + 1)}*`;
}

/**
 * Runs an acquisition and tells `probe` how it settled: `acquired` with a lock; `busy` without
 * one, where the caller did not wait, or `throttled` when the holder is a `holdFor` throttle
 * whose window was open (the refusal's `throttled`, or `throttled()` for a refusal without an
 * error), whatever the caller's own options; `timeout` when the wait ran out; `aborted` by the
 * caller's signal; `error` for anything else.
 */
export async function observeAcquire<T extends { readonly fencingToken: number } | undefined>(
  probe: LockProbe,
  options: ResolvedAcquireOptions,
  acquire: () => Promise<T>,
  throttled: () => boolean = () => false,
): Promise<T> {
  let lock: T;
  try {
    lock = await acquire();
  } catch (error) {
    probe.settled(outcomeOf(error, options), undefined, error);
    throw error;
  }
  if (lock !== undefined) probe.settled('acquired', lock.fencingToken);
  else probe.settled(throttled() ? 'throttled' : 'busy');
  return lock;
}

function outcomeOf(error: unknown, options: ResolvedAcquireOptions): AcquireOutcome {
  if (options.signal?.aborted && error === options.signal.reason) return 'aborted';
  if (!(error instanceof LockNotAcquiredError)) return 'error';
  if (error.throttled) return 'throttled';
  return options.waitTimeout === 0 ? 'busy' : 'timeout';
}
