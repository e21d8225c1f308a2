import { LockConnectionError, messageOf } from '../../lock.errors.js';

/**
 * Runs one Redis call for `key` with a time limit, turning failures into
 * `LockConnectionError`. The returned promise carries the raw call as `late`, for callers that
 * must clean up after a reply that arrives past the limit.
 */
export type TimedCommand = <T>(
  key: string,
  operation: string,
  call: () => Promise<T>,
) => Promise<T> & { late: Promise<T> };

/** The {@link TimedCommand} of a store whose commands get `commandTimeout` ms each. */
export function timedCommand(commandTimeout: number): TimedCommand {
  return <T>(key: string, operation: string, call: () => Promise<T>) => {
    const late = call();
    let timer: NodeJS.Timeout | undefined;
    const limited = new Promise<T>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LockConnectionError(
              key,
              `${operation} got no answer from Redis within ${commandTimeout} ms`,
            ),
          ),
        commandTimeout,
      );
      late.then(resolve, (error: unknown) =>
        reject(
          new LockConnectionError(key, `${operation} failed: ${messageOf(error)}`, {
            cause: error,
          }),
        ),
      );
    }).finally(() => clearTimeout(timer));
    return Object.assign(limited, { late });
  };
}
