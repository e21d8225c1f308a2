import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { lockIdOf } from '../../src/keys/lock-keys.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { backendOf } from '../../src/store/describe-store.js';
import { createTelemetry } from '../../src/telemetry/load-telemetry.js';
import { lockNameOf, NO_TELEMETRY } from '../../src/telemetry/lock-telemetry.js';

const options = { ttl: 1_000, waitTimeout: 0, watchdog: true };
const nameOf = (key: string, label?: string, template?: string) =>
  lockNameOf(lockIdOf('lock:', key, template), { ...options, label });

describe('Telemetry', () => {
  it('names a manual key without its last part, so that ids do not become series', () => {
    expect(nameOf('order:42')).toBe('order:*');
    expect(nameOf('tenant:7:invoice:42')).toBe('tenant:7:invoice:*');
    expect(nameOf('order:')).toBe('order:*');
    expect(nameOf('nightly-report')).toBe('*');
  });

  it('prefers the label, then the @WithLock template', () => {
    expect(nameOf('order:42', 'orders', 'order:<id>')).toBe('orders');
    expect(nameOf('order:42', undefined, 'order:<id>')).toBe('order:<id>');
  });

  it('names each backend', () => {
    const backend = (given: object) => backendOf(resolveModuleOptions(given));
    expect(backend({ store: 'memory' })).toBe('memory');
    expect(backend({ redis: 'redis://h:1' })).toBe('redis');
    expect(backend({ redis: { sentinels: [{ host: 's', port: 1 }], name: 'm' } })).toBe(
      'redis-sentinel',
    );
    expect(backend({ redis: { cluster: [{ host: 'h', port: 1 }] } })).toBe('redis-cluster');
    expect(backend({ redis: ['redis://a:1', 'redis://b:1', 'redis://c:1'] })).toBe('redlock');
    expect(backend({ zookeeper: 'zk:2181' })).toBe('zookeeper');
  });

  describe('when the module boots', () => {
    const memory = resolveModuleOptions({ store: 'memory' });
    const warn = () => undefined;

    afterEach(() => {
      metrics.disable();
      trace.disable();
    });

    it('is off with no provider registered: the API’s no-ops would cost every call for nothing', () => {
      expect(createTelemetry(memory, warn)).toBe(NO_TELEMETRY);
    });

    it('is on with a meter provider, or a tracer provider, registered', () => {
      metrics.setGlobalMeterProvider(new MeterProvider());
      expect(createTelemetry(memory, warn)).not.toBe(NO_TELEMETRY);
      metrics.disable();
      trace.setGlobalTracerProvider(new BasicTracerProvider());
      expect(createTelemetry(memory, warn)).not.toBe(NO_TELEMETRY);
    });
  });
});
