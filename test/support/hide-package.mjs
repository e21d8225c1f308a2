/**
 * Preloaded (`node --import`) into a child process to play an install without the package that
 * LOCK_HIDDEN_PACKAGE names (an optional peer such as `pg`): resolving it (the library loads it
 * with `require`) fails as it would there.
 */
import Module from 'node:module';

const hidden = process.env.LOCK_HIDDEN_PACKAGE;
const loader =
  /** @type {{ _resolveFilename: (request: string, ...rest: unknown[]) => string }} */ (
    /** @type {unknown} */ (Module)
  );
const resolve = loader._resolveFilename;
/**
 * @param {string} request
 * @param {unknown[]} rest
 */
loader._resolveFilename = function (request, ...rest) {
  if (request === hidden) {
    throw Object.assign(new Error(`Cannot find module '${request}'`), {
      code: 'MODULE_NOT_FOUND',
    });
  }
  return resolve.call(this, request, ...rest);
};
