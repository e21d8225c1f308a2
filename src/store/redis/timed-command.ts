import { LockConnectionError, LockError, messageOf } from '../../lock.errors.js';

/**
 * Runs one Redis call for `key` with a time limit, turning failures into
 * `LockConnectionError` (a `LockError` of the call's own passes as it is). The returned promise
 * carries the raw call as `late`, for callers that must clean up after a reply that arrives
 * past the limit.
 */
export type TimedCommand = <T>(
  key: string,
  operation: string,
  call: () => Promise<T>,
) => Promise<T> & { late: Promise<T> };

/**
 * The {@link TimedCommand} of a store whose commands get `commandTimeout` ms each. It is on the
 * path of every acquisition and release, so it settles with one promise of its own, not a chain.
 * @param server what answers, for the error messages
 */
export function timedCommand(commandTimeout: number, server = 'Redis'): TimedCommand {
  return <T>(key: string, operation: string, call: () => Promise<T>) => {
    const late = call();
    const limited = new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new LockConnectionError(
              key,
              `${operation} got no answer from ${server} within ${commandTimeout} ms`,
            ),
          ),
        commandTimeout,
      );
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
              : new LockConnectionError(key, `${operation} failed: ${messageOf(error)}`, {
                  cause: error,
                }),
          );
        },
      );
    }) as Promise<T> & { late: Promise<T> };
    limited.late = late;
    return limited;
  };
}
