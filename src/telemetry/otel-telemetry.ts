import type { Attributes, Counter, Histogram, Tracer, UpDownCounter } from '@opentelemetry/api';
import { messageOf } from '../lock.errors.js';
import type { LockId } from '../keys/lock-keys.js';
import type { ResolvedAcquireOptions } from '../options/lock-options.interface.js';
import { kindOf } from '../store/lock-kind.js';
import type { BackendName } from '../store/describe-store.js';
import { lockNameOf, type LockProbe, type LockTelemetry } from './lock-telemetry.js';
import { OtelLockProbe } from './otel-probe.js';

/** `@opentelemetry/api`, an optional peer dependency, as loaded when the module boots. */
export type OtelApi = typeof import('@opentelemetry/api');

/** The name of the library's meter and tracer. */
export const INSTRUMENTATION_SCOPE = 'nestjs-redis-lock';

/**
 * Bucket boundaries in seconds. OpenTelemetry's defaults are meant for milliseconds, and would
 * put every acquisition of a healthy lock into the first bucket.
 */
const ACQUIRE_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];
const HOLD_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

/** The instruments of one module, made once when it boots. */
export interface LockInstruments {
  readonly acquireDuration: Histogram;
  readonly holdDuration: Histogram;
  readonly lost: Counter;
  readonly held: UpDownCounter;
  readonly waiting: UpDownCounter;
}

/**
 * Metrics and spans through `@opentelemetry/api`, from the meter and tracer providers registered
 * globally when the module boots. A provider that throws costs its own output only: the failure
 * is reported once and the lock call goes on.
 */
export class OtelTelemetry implements LockTelemetry {
  private warned = false;

  private constructor(
    readonly api: OtelApi,
    private readonly backend: BackendName,
    private readonly warn: (message: string) => void,
    readonly instruments: LockInstruments | undefined,
    readonly tracer: Tracer | undefined,
  ) {}

  /**
   * The telemetry of a module on `backend`, or `undefined` when neither metrics nor traces can
   * be had: no provider is registered (the API's no-ops would cost every lock call for
   * nothing), or the registered ones throw.
   */
  static create(
    api: OtelApi,
    backend: BackendName,
    warn: (message: string) => void,
  ): OtelTelemetry | undefined {
    const failures: string[] = [];
    const attempt = <T>(what: string, make: () => T): T | undefined => {
      try {
        return make();
      } catch (error) {
        failures.push(`${what}: ${messageOf(error)}`);
        return undefined;
      }
    };
    const instruments = attempt('metrics', () => instrumentsOf(api));
    const tracer = attempt('traces', () => tracerOf(api));
    if (failures.length > 0) {
      warn(`Lock telemetry records no ${failures.join('; no ')}`);
    }
    if (!instruments && !tracer) return undefined;
    return new OtelTelemetry(api, backend, warn, instruments, tracer);
  }

  startAcquire(id: LockId, options: ResolvedAcquireOptions): LockProbe | undefined {
    try {
      const attributes: Attributes = {
        'lock.name': lockNameOf(id, options),
        'lock.kind': kindOf(options).type,
        'lock.backend': this.backend,
      };
      return new OtelLockProbe(this, attributes);
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** A provider threw: said once, so that a broken exporter does not flood the log. */
  failed(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.warn(`Lock telemetry failed, locks go on unaffected: ${messageOf(error)}`);
  }
}

/**
 * The library's tracer, or `undefined` when no tracer provider is registered (the API would
 * only hand out spans that record nothing).
 */
function tracerOf(api: OtelApi): Tracer | undefined {
  const global = api.trace.getTracerProvider();
  const unset = new api.ProxyTracerProvider().getDelegate();
  if (global instanceof api.ProxyTracerProvider && global.getDelegate() === unset) return undefined;
  return api.trace.getTracer(INSTRUMENTATION_SCOPE);
}

/** The library's instruments, or `undefined` when no meter provider is registered. */
function instrumentsOf(api: OtelApi): LockInstruments | undefined {
  const meter = api.metrics.getMeter(INSTRUMENTATION_SCOPE);
  if (meter === api.createNoopMeter()) return undefined;
  return {
    acquireDuration: meter.createHistogram('lock.acquire.duration', {
      description: 'Time from a call that asks for a lock to its outcome',
      unit: 's',
      advice: { explicitBucketBoundaries: ACQUIRE_BUCKETS },
    }),
    holdDuration: meter.createHistogram('lock.hold.duration', {
      description: 'Time from the grant of a lock to its release or loss',
      unit: 's',
      advice: { explicitBucketBoundaries: HOLD_BUCKETS },
    }),
    lost: meter.createCounter('lock.lost', {
      description: 'Locks lost while held: their work ran unprotected from then on',
      unit: '{lock}',
    }),
    held: meter.createUpDownCounter('lock.held', {
      description: 'Locks held by this process',
      unit: '{lock}',
    }),
    waiting: meter.createUpDownCounter('lock.waiting', {
      description: 'Callers of this process waiting for a held lock',
      unit: '{caller}',
    }),
  };
}
