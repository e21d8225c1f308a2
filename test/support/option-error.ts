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

/** Expects `run` to refuse `option`, with `expected` in its message. */
export function expectOptionError(
  run: () => unknown,
  option: string,
  expected: string,
): LockOptionsError {
  const error = optionErrorOf(run);
  expect({ option: error.option, message: error.message }).toEqual({
    option,
    message: expect.stringContaining(expected),
  });
  return error;
}
