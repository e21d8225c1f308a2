/**
 * Where the sample keeps its data (points, prizes, submissions, products). The lock library
 * does not care where that is; the sample keeps it beside the locks so that several processes
 * of the app see the same balances.
 */
export interface StateStore {
  /** The value stored at `key`, or `undefined`. */
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  /** Atomically adds `by` (which may be negative) to the integer at `key`; returns the result. */
  increment(key: string, by: number): Promise<number>;
  /** Appends `value` to the list at `key`. */
  append(key: string, value: string): Promise<void>;
  /** The list at `key`, oldest first (empty when there is none). */
  list(key: string): Promise<string[]>;
}

/** Injection token of the {@link StateStore}. */
export const STATE_STORE = Symbol('sample:state-store');
