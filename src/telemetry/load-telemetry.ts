import { createRequire } from 'node:module';
import { messageOf } from '../lock.errors.js';
import type { ResolvedLockOptions } from '../options/lock-options.interface.js';
import { backendOf } from '../store/describe-store.js';
import { NO_TELEMETRY, type LockTelemetry } from './lock-telemetry.js';
import { OtelTelemetry, type OtelApi } from './otel-telemetry.js';

const API_PACKAGE = '@opentelemetry/api';

/** The API once looked for: `null` when it is not installed. */
let api: OtelApi | null | undefined;

/**
 * `@opentelemetry/api`, loaded the first time a module boots, so that apps without it install
 * nothing and pay nothing; `undefined` when it is not installed.
 */
function loadApi(warn: (message: string) => void): OtelApi | undefined {
  if (api === undefined) {
    try {
      api = createRequire(import.meta.url)(API_PACKAGE) as OtelApi;
    } catch (error) {
      api = null;
      if ((error as { code?: unknown } | null)?.code !== 'MODULE_NOT_FOUND') {
        warn(`Lock telemetry is off: ${API_PACKAGE} could not be loaded (${messageOf(error)})`);
      }
    }
  }
  return api ?? undefined;
}

/**
 * The telemetry of a module with these options: OpenTelemetry metrics and spans when
 * `@opentelemetry/api` is installed, from the providers registered globally at this moment
 * (the module boots), else nothing.
 * @param warn where telemetry failures are reported, once each
 */
export function createTelemetry(
  options: ResolvedLockOptions,
  warn: (message: string) => void,
): LockTelemetry {
  const loaded = loadApi(warn);
  if (loaded === undefined) return NO_TELEMETRY;
  return OtelTelemetry.create(loaded, backendOf(options), warn) ?? NO_TELEMETRY;
}
