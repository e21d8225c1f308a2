/**
 * Preloaded (`node --import`) into a child process to play a Redis user's install, which has no
 * `node-zookeeper-client`: resolving it (the library loads it with `require`) fails as it would
 * there.
 */
import Module from 'node:module';

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
  if (request === 'node-zookeeper-client') {
    throw Object.assign(new Error(`Cannot find module '${request}'`), {
      code: 'MODULE_NOT_FOUND',
    });
  }
  return resolve.call(this, request, ...rest);
};
