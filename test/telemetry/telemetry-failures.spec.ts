import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import {
  context,
  metrics,
  ROOT_CONTEXT,
  trace,
  type ContextManager,
  type MeterProvider,
  type TracerProvider,
} from '@opentelemetry/api';
import { bootLockApp, sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

const boom = () => {
  throw new Error('the exporter is down');
};

/** Providers that throw the moment they are asked for a meter or a tracer. */
const refusing = {
  meters: { getMeter: boom } as unknown as MeterProvider,
  tracers: { getTracer: boom } as unknown as TracerProvider,
};

/** A meter whose instruments throw on every record, and spans that throw on every call. */
const throwingInstrument = { record: boom, add: boom };
const throwingSpan = {
  isRecording: () => true,
  spanContext: () => ({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 }),
  setAttribute: boom,
  setAttributes: boom,
  setStatus: boom,
  end: boom,
};
const throwing = {
  meters: {
    getMeter: () => ({
      createHistogram: () => throwingInstrument,
      createCounter: () => throwingInstrument,
      createUpDownCounter: () => throwingInstrument,
    }),
  } as unknown as MeterProvider,
  tracers: { getTracer: () => ({ startSpan: () => throwingSpan }) } as unknown as TracerProvider,
};
/** A context manager that cannot run anything in a context. */
const brokenContexts: ContextManager = {
  active: () => ROOT_CONTEXT,
  with: boom,
  bind: (_context, target) => target,
  enable() {
    return this;
  },
  disable() {
    return this;
  },
};
/** A tracer whose every span throws as it starts. */
const failingStarts = {
  meters: throwing.meters,
  tracers: { getTracer: () => ({ startSpan: boom }) } as unknown as TracerProvider,
};

/** A telemetry failure never fails a lock call: locking goes on, and the log says so once. */
describe.each([
  ['providers that throw when asked for a meter and a tracer', refusing, undefined],
  ['instruments and spans that throw, and a context manager that throws', throwing, brokenContexts],
  ['spans that throw as they start', failingStarts, undefined],
])('With %s', (_, providers, contextManager) => {
  let warn: jest.SpiedFunction<Logger['warn']>;

  beforeAll(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    metrics.setGlobalMeterProvider(providers.meters);
    trace.setGlobalTracerProvider(providers.tracers);
    if (contextManager) context.setGlobalContextManager(contextManager);
  });

  afterAll(() => {
    metrics.disable();
    trace.disable();
    context.disable();
    warn.mockRestore();
  });

  it('locks, waits, hands over and releases as without telemetry, and warns once', async () => {
    const options = { redis: sharedRedisUrl(), keyPrefix: uniquePrefix() };
    const holder = await bootLockApp(options);
    const other = await bootLockApp(options);
    try {
      const lock = await holder.locks.acquire('order:1');
      expect(await other.locks.tryAcquire('order:1')).toBeNull();
      const waiting = other.locks.using('order:1', (next) => next.fencingToken, {
        waitTimeout: 5_000,
      });
      await sleep(50);
      expect(await lock.release()).toBe(true);
      expect(await waiting).toBeGreaterThan(lock.fencingToken);
      expect(await holder.locks.using('order:2', () => 'done')).toBe('done');
      expect(await holder.locks.isLocked('order:1')).toBe(false);
    } finally {
      await holder.close();
      await other.close();
    }
    const messages = warn.mock.calls.map(([message]) => String(message));
    const failures = messages.filter((message) => message.includes('the exporter is down'));
    // At most one per app, whatever the number of failed reports.
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBeLessThanOrEqual(2);
  });
});
