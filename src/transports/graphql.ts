import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
} from '../lock.errors.js';
import {
  OUTCOMES,
  type LockErrorBody,
  type LockGraphQLErrorExtensions,
  type LockRefusal,
} from './lock-error-body.js';

/**
 * The error a GraphQL resolver ends with: graphql-js copies the `extensions` of the error it
 * wraps into the response, and Apollo keeps an `extensions.code` that is set. Still an
 * instance of the class of the error it answers, and named after it, for an Apollo
 * `formatError` that looks for one.
 */
export function answerGraphQL(error: LockRefusal, body: LockErrorBody): LockRefusal {
  const extensions: LockGraphQLErrorExtensions = {
    code: OUTCOMES[body.code].graphQL,
    ...(body.retryAfterMs === undefined ? {} : { retryAfterMs: body.retryAfterMs }),
  };
  if (error instanceof LockConnectionError) {
    return new LockStoreUnavailableGraphQLError(error.key, body.message, extensions);
  }
  return error instanceof LockShuttingDownError
    ? new LockShuttingDownGraphQLError(error.key, extensions)
    : new LockNotAcquiredGraphQLError(error, extensions);
}

class LockNotAcquiredGraphQLError extends LockNotAcquiredError {
  constructor(
    { key, waitedMs, holderTtlMs, throttled, retryAfterMs }: LockNotAcquiredError,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key, waitedMs, holderTtlMs, throttled, retryAfterMs);
    this.name = LockNotAcquiredError.name;
  }
}

class LockShuttingDownGraphQLError extends LockShuttingDownError {
  constructor(
    key: string,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key);
    this.name = LockShuttingDownError.name;
  }
}

/** A store outage, with the body's message: the client's own error stays in the server's log. */
class LockStoreUnavailableGraphQLError extends LockConnectionError {
  constructor(
    key: string,
    message: string,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key, 'the lock store is unavailable');
    this.name = LockConnectionError.name;
    this.message = message;
  }
}
