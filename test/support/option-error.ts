import { LockOptionsError } from '../../src/index.js';

/** The LockOptionsError that `run` throws; fails the test if it throws nothing or another error. */
export function optionErrorOf(run: () => unknown): LockOptionsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(LockOptionsError);
    return error as LockOptionsError;
  }
  throw new Error('expected a LockOptionsError; nothing was thrown');
}

/**
 * Expects `run` to refuse `option` (its name, or an asymmetric matcher such as
 * `expect.any(String)`), with `expected` in its message.
 */
export function expectOptionError(
  run: () => unknown,
  option: unknown,
  expected: string,
): LockOptionsError {
  const error = optionErrorOf(run);
  const message: unknown = expect.stringContaining(expected);
  expect({ option: error.option, message: error.message }).toEqual({ option, message });
  return error;
}
