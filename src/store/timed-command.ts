import { lockNameOf } from '../keys/lock-keys.js';
import { LockConnectionError, LockError, messageOf } from '../lock.errors.js';

/**
 * Runs one call to the store's server (Redis, ZooKeeper) for `key` (a key of the store) with a
 * time limit, turning failures into `LockConnectionError`s that name the key as the caller did
 * and carry the failure, or the timeout, as their `cause` (a `LockError` of the call's own
 * passes as it is). The returned promise carries the raw call as `late`, for callers that must
 * clean up after a reply that arrives past the limit.
 */
export type TimedCommand = <T>(
  key: string,
  operation: string,
  call: () => Promise<T>,
) => Promise<T> & { late: Promise<T> };

/**
 * The {@link TimedCommand} of a store whose commands get `commandTimeout` ms each. It is on the
 * path of every acquisition and release, so it settles with one promise of its own, not a chain.
 * @param keyPrefix the module's `keyPrefix`, which errors leave out of the key they name
 * @param server the backend that answers (`'Redis'`, `'ZooKeeper'`), for the error messages
 */
export function timedCommand(
  commandTimeout: number,
  keyPrefix: string,
  server: string,
): TimedCommand {
  return <T>(key: string, operation: string, call: () => Promise<T>) => {
    const late = call();
    const limited = new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const timeout = new Error(`no answer from ${server} within ${commandTimeout} ms`);
        timeout.name = 'TimeoutError';
        reject(
          new LockConnectionError(
            lockNameOf(keyPrefix, key),
            `${operation} got ${timeout.message}`,
            { cause: timeout },
          ),
        );
      }, commandTimeout);
      late.then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        (error: unknown) => {
          clearTimeout(timer);
          // A lock error raised by the call itself says what is wrong better than "failed".
          reject(
            error instanceof LockError
              ? error
              : new LockConnectionError(
                  lockNameOf(keyPrefix, key),
                  `${operation} failed: ${messageOf(error)}`,
                  { cause: error instanceof Error ? error : new Error(messageOf(error)) },
                ),
          );
        },
      );
    }) as Promise<T> & { late: Promise<T> };
    limited.late = late;
    return limited;
  };
}
