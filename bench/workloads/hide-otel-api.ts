/**
 * Preloaded (`node --import`) into the telemetry benchmark's `off` process to play an app
 * without `@opentelemetry/api` installed: resolving it (the library loads it with `require`)
 * fails as it would there.
 */
import Module from 'node:module';

const loader = Module as unknown as {
  _resolveFilename: (request: string, ...rest: unknown[]) => string;
};
const resolve = loader._resolveFilename;
loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
  if (request === '@opentelemetry/api') {
    throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolve.call(this, request, ...rest);
};
