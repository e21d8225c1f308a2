/**
 * Preloaded (`node --import`) into a child process to play an install that lacks the packages
 * named in HIDE_PACKAGES (comma-separated), e.g. an app with node-redis and no ioredis:
 * resolving one of them, by `require` (as the library loads client packages) or by `import`,
 * fails as it would there.
 */
import Module, { register } from 'node:module';

const hidden = (process.env.HIDE_PACKAGES ?? '').split(',').filter(Boolean);

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
  if (hidden.includes(request)) {
    throw Object.assign(new Error(`Cannot find module '${request}'`), {
      code: 'MODULE_NOT_FOUND',
    });
  }
  return resolve.call(this, request, ...rest);
};

const hook = `
const hidden = ${JSON.stringify(hidden)};
export async function resolve(specifier, context, next) {
  if (hidden.includes(specifier)) {
    throw Object.assign(new Error("Cannot find package '" + specifier + "'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
