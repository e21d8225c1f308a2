import { SpanKind, trace, type Span } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Redis, type Command } from 'ioredis';
import {
  bootLockApp,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { OtelSdk } from '../support/otel.js';

/**
 * The spans of one request: the caller's, the library's `lock.acquire` and `lock.release` under
 * it, and under those the spans of the Redis client's commands, made here the way the ioredis
 * auto-instrumentation makes them (a span per command, parented by the context active when the
 * command is sent). The library makes no span per command itself.
 */
const SCRIPT = /^redis eval(sha)?$/;
const ms = ([seconds, nanos]: [number, number]) => seconds * 1_000 + nanos / 1e6;

describe('Lock spans', () => {
  let sdk: OtelSdk;
  let holder: LockApp;
  let other: LockApp;
  const tracer = () => trace.getTracer('test');
  // Wrapped as the ioredis instrumentation wraps it, and put back after.
  const sendCommand = Object.getOwnPropertyDescriptor(Redis.prototype, 'sendCommand')!.value as (
    this: Redis,
    command: Command,
    ...rest: unknown[]
  ) => unknown;

  beforeAll(async () => {
    sdk = OtelSdk.start();
    Redis.prototype.sendCommand = function (this: Redis, command: Command, ...rest: unknown[]) {
      const span = tracer().startSpan(`redis ${command.name}`, { kind: SpanKind.CLIENT });
      command.promise.then(
        () => span.end(),
        () => span.end(),
      );
      return sendCommand.call(this, command, ...rest);
    };
    const options = { redis: sharedRedisUrl(), keyPrefix: uniquePrefix() };
    holder = await bootLockApp(options);
    other = await bootLockApp(options);
    // Connections made and scripts loaded: what the first call alone pays is not what is tested.
    for (const app of [holder, other]) await app.locks.using('warm-up', () => undefined);
  });

  afterAll(async () => {
    await holder?.close();
    await other?.close();
    Redis.prototype.sendCommand = sendCommand;
    await sdk.stop();
  });

  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  const idOf = (span: Span | ReadableSpan) => span.spanContext().spanId;
  const childrenOf = (parent: ReadableSpan) =>
    sdk.spans.getFinishedSpans().filter((span) => parentOf(span) === idOf(parent));

  it('nests lock.acquire and lock.release under the caller’s span, and the client’s command spans under them', async () => {
    let request!: Span;
    await tracer().startActiveSpan('GET /orders/:id', async (span) => {
      request = span;
      await holder.locks.using('order:1', () =>
        tracer().startActiveSpan('work', (work) => work.end()),
      );
      span.end();
    });

    const [acquire] = sdk.finished('lock.acquire', 'order:*');
    const [release] = sdk.finished('lock.release', 'order:*');
    const [work] = sdk.finished('work');
    expect(parentOf(acquire)).toBe(idOf(request));
    expect(parentOf(release)).toBe(idOf(request));
    // The work runs under the caller's span, beside the lock's spans, not inside them.
    expect(parentOf(work)).toBe(idOf(request));
    expect(acquire.kind).toBe(SpanKind.INTERNAL);
    expect(release.kind).toBe(SpanKind.INTERNAL);
    expect(acquire.spanContext().traceId).toBe(request.spanContext().traceId);
    // One script call each (EVALSHA, or EVAL the first time a script runs).
    expect(childrenOf(acquire).map((span) => span.name)).toEqual([expect.stringMatching(SCRIPT)]);
    expect(childrenOf(release).map((span) => span.name)).toEqual([expect.stringMatching(SCRIPT)]);
    expect(childrenOf(acquire)[0].kind).toBe(SpanKind.CLIENT);
  });

  it('nests a waiter’s later attempts under its lock.acquire too', async () => {
    const lock = await holder.locks.acquire('queue:1');
    let waited!: Promise<void>;
    tracer().startActiveSpan('job', (span) => {
      // Without the watchdog, a waiter does not hold from the release's notice (the handover
      // lease is too short for it): it takes the lock with an attempt, after the release.
      waited = other.locks
        .using('queue:1', () => undefined, { waitTimeout: 5_000, watchdog: false })
        .finally(() => span.end());
    });
    await sleep(100);
    await lock.release();
    await waited;

    const [job] = sdk.finished('job');
    const [, acquire] = sdk.finished('lock.acquire', 'queue:*');
    expect(parentOf(acquire)).toBe(idOf(job));
    expect(acquire.attributes['lock.outcome']).toBe('acquired');
    // The first attempt, which queued it, and the one that took the lock once it was free.
    const [released] = sdk.finished('lock.release', 'queue:*');
    const attempts = childrenOf(acquire).filter((span) => SCRIPT.test(span.name));
    expect(attempts.some((span) => ms(span.startTime) < ms(released.startTime))).toBe(true);
    expect(attempts.some((span) => ms(span.startTime) > ms(released.startTime))).toBe(true);
  });

  it('ends the hold of a lock that `using` lost with a lock.release span whose outcome is lost', async () => {
    const raw = new Redis(sharedRedisUrl());
    try {
      const work = holder.locks.using(
        'lost:1',
        async (lock) => {
          await raw.del(lock.key);
          await lock.extend().catch(() => undefined);
          expect(lock.signal.aborted).toBe(true);
        },
        { ttl: 5_000 },
      );
      await expect(work).rejects.toThrow(/was lost/);
      const releases = sdk.finished('lock.release', 'lost:*');
      expect(releases).toHaveLength(1);
      expect(releases[0].attributes['lock.outcome']).toBe('lost');
      expect(releases[0].attributes['lock.fencing_token']).toEqual(expect.any(Number));
      // Nothing of the library's was left to delete: the span sent no command.
      expect(childrenOf(releases[0])).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });

  it('without a caller’s span, starts a trace of its own', async () => {
    await holder.locks.using('root:1', () => undefined);
    const [acquire] = sdk.finished('lock.acquire', 'root:*');
    expect(parentOf(acquire)).toBeUndefined();
    expect(childrenOf(acquire)).toHaveLength(1);
  });
});
