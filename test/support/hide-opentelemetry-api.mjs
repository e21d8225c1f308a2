/**
 * Preloaded (`node --import`) into a child process to play an app without
 * `@opentelemetry/api` installed: resolving it (the library loads it with `require`) fails as it
 * would there, and each attempt is counted in `globalThis.openTelemetryLookups`.
 */
import Module from 'node:module';

const loader =
  /** @type {{ _resolveFilename: (request: string, ...rest: unknown[]) => string }} */ (
    /** @type {unknown} */ (Module)
  );
const resolve = loader._resolveFilename;
const counted = /** @type {{ openTelemetryLookups?: number }} */ (globalThis);
counted.openTelemetryLookups = 0;
/**
 * @param {string} request
 * @param {unknown[]} rest
 */
loader._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry/api') {
    counted.openTelemetryLookups = (counted.openTelemetryLookups ?? 0) + 1;
    throw Object.assign(new Error(`Cannot find module '${request}'`), {
      code: 'MODULE_NOT_FOUND',
    });
  }
  return resolve.call(this, request, ...rest);
};
