import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
} from '../lock.errors.js';

/**
 * The errors the exception filter answers: a held lock, a call refused during shutdown, and a
 * lock store that could not be reached.
 */
export type LockRefusal = LockNotAcquiredError | LockShuttingDownError | LockConnectionError;

/**
 * When a client may try again after the lock store could not be reached: an outage is not a
 * verdict, and a reconnect (or a failover) usually takes about this long.
 */
export const STORE_RETRY_AFTER_MS = 1_000;

/**
 * What a client learns of a call that failed on a held lock, or was refused because this
 * instance is shutting down: the body of the HTTP answer, and (with `status: 'error'`) the
 * payload of an RPC error reply or a WebSocket `exception` event.
 */
export interface LockErrorBody {
  statusCode: 409 | 429 | 503;
  error: 'Conflict' | 'Too Many Requests' | 'Service Unavailable';
  /**
   * `LOCK_THROTTLED` for a closed `holdFor` throttle, `LOCK_SHUTTING_DOWN` for a call refused
   * by an instance that is shutting down ({@link LockShuttingDownError}),
   * `LOCK_STORE_UNAVAILABLE` when the lock store could not be reached
   * ({@link LockConnectionError}: retry, here or elsewhere), `LOCK_CONFLICT` otherwise.
   */
  code: 'LOCK_CONFLICT' | 'LOCK_THROTTLED' | 'LOCK_SHUTTING_DOWN' | 'LOCK_STORE_UNAVAILABLE';
  /** Names the key without the module's `keyPrefix`. */
  message: string;
  /** Whole ms after which a retry can succeed, when known: {@link LockNotAcquiredError.retryAfterMs}. */
  retryAfterMs?: number;
}

/** The `extensions` of the GraphQL error a resolver that failed on a lock ends with. */
export interface LockGraphQLErrorExtensions {
  code: 'CONFLICT' | 'TOO_MANY_REQUESTS' | 'SERVICE_UNAVAILABLE';
  retryAfterMs?: number;
}

/** gRPC's status codes (grpc-js's `status`) for a held lock, a closed throttle, and shutdown. */
const GRPC_ABORTED = 10;
const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_UNAVAILABLE = 14;

/** How each transport tells each outcome, in one table so that they never disagree. */
export const OUTCOMES = {
  LOCK_CONFLICT: {
    statusCode: 409,
    error: 'Conflict',
    graphQL: 'CONFLICT',
    grpc: GRPC_ABORTED,
  },
  LOCK_THROTTLED: {
    statusCode: 429,
    error: 'Too Many Requests',
    graphQL: 'TOO_MANY_REQUESTS',
    grpc: GRPC_RESOURCE_EXHAUSTED,
  },
  LOCK_SHUTTING_DOWN: {
    statusCode: 503,
    error: 'Service Unavailable',
    graphQL: 'SERVICE_UNAVAILABLE',
    grpc: GRPC_UNAVAILABLE,
  },
  LOCK_STORE_UNAVAILABLE: {
    statusCode: 503,
    error: 'Service Unavailable',
    graphQL: 'SERVICE_UNAVAILABLE',
    grpc: GRPC_UNAVAILABLE,
  },
} as const;

/** The body every transport builds its answer from. */
export function bodyOf(error: LockRefusal): LockErrorBody {
  if (error instanceof LockConnectionError) {
    // The client's own error (addresses, ports) stays in the server's log.
    const { statusCode, error: name } = OUTCOMES.LOCK_STORE_UNAVAILABLE;
    return {
      statusCode,
      error: name,
      code: 'LOCK_STORE_UNAVAILABLE',
      message: `Lock "${error.key}": the lock store is unavailable, try again`,
      retryAfterMs: STORE_RETRY_AFTER_MS,
    };
  }
  const code =
    error instanceof LockShuttingDownError
      ? 'LOCK_SHUTTING_DOWN'
      : error.throttled
        ? 'LOCK_THROTTLED'
        : 'LOCK_CONFLICT';
  const { statusCode, error: name } = OUTCOMES[code];
  const retryAfterMs = error instanceof LockNotAcquiredError ? error.retryAfterMs : undefined;
  return {
    statusCode,
    error: name,
    code,
    message: error.message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)) }),
  };
}
