/**
 * Base class of every error this library throws, so that callers can catch them all at once.
 * Every error about one lock has a `key`: the key as the caller named it, without the module's
 * `keyPrefix` (what was passed to `acquire()`, or what a `@WithLock` template resolved to).
 */
export class LockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The lock was held by someone else for the whole time the caller was willing to wait.
 */
export class LockNotAcquiredError extends LockError {
  /**
   * @param key the key as the caller named it (without the module's `keyPrefix`)
   * @param waitedMs how long the caller waited before giving up
   * @param holderTtlMs the holder's remaining TTL in the store as the last attempt saw it, when
   *   known. No forecast: the holder's watchdog renews it, and the holder may release sooner.
   * @param throttled the holder is a `holdFor` throttle whose window was open, as the store
   *   reported it (whatever the caller's own options): the caller is early, not in a conflict
   * @param retryAfterMs when a retry can succeed at the earliest, when that is known: for a
   *   throttle, what is left of its window. A plain conflict has none, as its holder may
   *   finish at any moment.
   */
  constructor(
    readonly key: string,
    readonly waitedMs: number,
    readonly holderTtlMs?: number,
    readonly throttled = false,
    readonly retryAfterMs = throttled ? holderTtlMs : undefined,
  ) {
    super(
      throttled
        ? `Lock "${key}" is a throttle that is still closed` +
            (retryAfterMs === undefined ? '' : `; retry in ${Math.ceil(retryAfterMs)} ms`)
        : `Lock "${key}" is held by another owner; gave up after waiting ${Math.round(waitedMs)} ms`,
    );
  }
}

/**
 * Ownership of a lock is known to be lost: its token was gone or replaced in the store, or
 * renewals could not reach the store before the lock's validity ran out. Used as the reason of
 * `lock.signal`.
 */
export class LockLostError extends LockError {
  /**
   * @param key the key as the caller named it (without the module's `keyPrefix`)
   * @param reason how ownership was lost
   */
  constructor(
    readonly key: string,
    readonly reason: string,
  ) {
    super(`Lock "${key}" was lost: ${reason}`);
  }
}

/**
 * This process's lock service is shutting down (the application's `beforeApplicationShutdown`
 * has begun), so it takes no more locks: a call that asks for one then, and a caller still
 * waiting for one when it begins, fail with this error. The lock may well be free: another
 * instance of the application can take it, which is why `LockExceptionFilter` answers it with
 * `503 Service Unavailable` (gRPC `UNAVAILABLE`), the answer clients retry elsewhere.
 */
export class LockShuttingDownError extends LockError {
  /** @param key the key as the caller named it (without the module's `keyPrefix`) */
  constructor(readonly key: string) {
    super(
      `Lock "${key}" was not taken: the lock service of this instance is shutting down; ` +
        'retry on another instance',
    );
  }
}

/** A lock key is missing, empty, too long, or cannot be built from a template or argument. */
export class LockKeyResolutionError extends LockError {}

/** An option given to the module, to an acquire call or to `@WithLock` is invalid. */
export class LockOptionsError extends LockError {
  /** @param where who was given the option, e.g. `@WithLock on Orders.pay`, for the message */
  constructor(
    readonly option: string,
    readonly value: unknown,
    expected: string,
    where?: string,
  ) {
    super(
      `${where ? `${where}: ` : ''}Invalid lock option "${option}": expected ${expected}, got ${describe(value)}`,
    );
  }
}

/**
 * The key is held as another kind of lock than the caller asked for: a semaphore of another
 * `limit`, a read-write lock asked for as a semaphore (or the other way round), or a mutex asked
 * for with `limit` or `mode`. The kinds are recorded with the key while anybody holds it.
 */
export class LockKindError extends LockError {
  /**
   * @param key the key as the caller named it (without the module's `keyPrefix`)
   * @param held the kind the key is held as, in words
   * @param asked the kind the caller asked for, in words
   */
  constructor(
    readonly key: string,
    readonly held: string,
    readonly asked: string,
  ) {
    super(
      `Lock "${key}" is held as ${held}, but this caller asked for ${asked}; ` +
        'every caller of one key must ask for the same kind (and the same limit)',
    );
  }
}

/**
 * The store (Redis, ZooKeeper) could not be reached, answered with an error, or did not answer
 * within `commandTimeout` while working on a lock, or could not decide the outcome.
 */
export class LockConnectionError extends LockError {
  /**
   * Always set: the client's error when the client failed; an Error named `TimeoutError` when
   * the store did not answer in time; otherwise an Error that states {@link reason} (RedLock's
   * quorum, replicas that did not acknowledge, a store already closed).
   */
  declare readonly cause: Error;

  /**
   * @param key the key as the caller named it (without the module's `keyPrefix`)
   * @param reason what went wrong, without the key
   * @param options.cause what failed underneath; an Error stating `reason` when not given
   */
  constructor(
    readonly key: string,
    readonly reason: string,
    options?: { cause?: Error },
  ) {
    super(`Lock "${key}": ${reason}`, { cause: options?.cause ?? new Error(reason) });
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  }
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value === null || typeof value !== 'object') return String(value);
  return `an object (${value.constructor?.name ?? 'Object'})`;
}

/** @internal The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A fenced write was refused: the resource has already seen a higher fencing token, so the
 * writer's lock was taken over by a newer holder (it expired during a pause, a slow network or
 * a failover) and its write would overwrite newer work.
 */
export class StaleFencingTokenError extends LockError {
  constructor(
    readonly resource: string,
    readonly fencingToken: number,
    readonly highestSeen: number,
  ) {
    super(
      `Write to "${resource}" refused: fencing token ${fencingToken} is older than ` +
        `${highestSeen}, which a newer lock holder has already presented`,
    );
  }
}

/**
 * RedLock could not reach a majority of its masters: the operation cannot be decided, so it
 * fails instead of guessing. Names the masters that did not answer.
 */
export class LockQuorumError extends LockConnectionError {
  /**
   * @param unreachable each master that failed, as `host:port`, with what went wrong
   * @param quorum how many masters must answer (a majority)
   * @param masters how many masters there are
   */
  constructor(
    key: string,
    operation: string,
    readonly unreachable: readonly { master: string; error: string }[],
    readonly quorum: number,
    readonly masters: number,
  ) {
    super(
      key,
      `${operation} needs ${quorum} of ${masters} Redis masters, but ${unreachable.length} ` +
        `could not be reached: ${unreachable.map(({ master, error }) => `${master} (${error})`).join(', ')}`,
    );
  }
}

/**
 * With `waitForReplicas`, too few replicas acknowledged an acquisition or renewal in time. A
 * failover could lose what they did not acknowledge, so the acquisition was undone (a renewal
 * does not count).
 */
export class LockReplicationError extends LockConnectionError {
  constructor(
    key: string,
    operation: string,
    readonly acknowledged: number,
    readonly wanted: number,
    timeout: number,
  ) {
    super(
      key,
      `${operation} was acknowledged by ${acknowledged} of the ${wanted} replicas it waits for ` +
        `within ${timeout} ms; a failover could lose it, so it does not count`,
    );
  }
}
