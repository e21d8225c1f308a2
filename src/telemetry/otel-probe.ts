import type { Attributes, Context, Span } from '@opentelemetry/api';
import { messageOf } from '../lock.errors.js';
import type { AcquireOutcome, HoldEnd, LockProbe } from './lock-telemetry.js';
import type { OtelTelemetry } from './otel-telemetry.js';

/** The outcome of a release, as the `lock.release` span says it. */
type ReleaseOutcome = HoldEnd | 'error';

/**
 * One acquisition and the hold it brings, as metrics and spans see them. Each report is
 * guarded on its own, so that a provider that throws loses that report and nothing else.
 */
export class OtelLockProbe implements LockProbe {
  private readonly startedAt = performance.now();
  /** Let go of once the acquisition settles: a lock may be held for long, the span is done. */
  private span?: Span;
  /** The span's context, for the store calls made on its behalf; none when it records nothing. */
  private context?: Context;
  private waited = false;
  /** When the hold began (`performance.now()`); `-1` before, and once its end is recorded. */
  private heldSince = -1;
  private fencingToken?: number;

  constructor(
    private readonly telemetry: OtelTelemetry,
    private readonly attributes: Attributes,
  ) {
    this.span = this.startSpan('lock.acquire');
    this.context = this.contextOf(this.span);
  }

  within<T>(call: () => T): T {
    return this.context === undefined ? call() : this.inContext(this.context, call);
  }

  waiting(): void {
    this.waited = true;
    this.guard(() => this.telemetry.instruments?.waiting.add(1, this.attributes));
  }

  settled(outcome: AcquireOutcome, fencingToken?: number, error?: unknown): void {
    const seconds = (performance.now() - this.startedAt) / 1000;
    const { instruments } = this.telemetry;
    const { attributes } = this;
    if (outcome === 'acquired') {
      this.heldSince = performance.now();
      this.fencingToken = fencingToken;
    }
    this.guard(() => {
      if (this.waited) instruments?.waiting.add(-1, attributes);
      if (outcome === 'acquired') instruments?.held.add(1, attributes);
      instruments?.acquireDuration.record(seconds, { ...attributes, 'lock.outcome': outcome });
    });
    this.endSpan(this.span, outcome, error);
    this.span = undefined;
    this.context = undefined;
  }

  ended(end: HoldEnd): void {
    if (this.heldSince < 0) return;
    const seconds = (performance.now() - this.heldSince) / 1000;
    this.heldSince = -1;
    const { instruments } = this.telemetry;
    const { attributes } = this;
    this.guard(() => {
      instruments?.held.add(-1, attributes);
      instruments?.holdDuration.record(seconds, { ...attributes, 'lock.end': end });
      if (end === 'lost') instruments?.lost.add(1, attributes);
    });
  }

  async traceRelease(release: () => Promise<boolean>): Promise<boolean> {
    const span = this.startSpan('lock.release');
    const context = this.contextOf(span);
    let released: boolean;
    try {
      released = await (context === undefined ? release() : this.inContext(context, release));
    } catch (error) {
      this.endSpan(span, 'error', error);
      throw error;
    }
    this.endSpan(span, released ? 'released' : 'lost');
    return released;
  }

  private startSpan(name: string): Span | undefined {
    const { tracer, api } = this.telemetry;
    if (tracer === undefined) return undefined;
    return this.guard(() =>
      tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes: this.attributes }),
    );
  }

  private contextOf(span: Span | undefined): Context | undefined {
    if (span === undefined) return undefined;
    const { api } = this.telemetry;
    return this.guard(() =>
      span.isRecording() ? api.trace.setSpan(api.context.active(), span) : undefined,
    );
  }

  private endSpan(
    span: Span | undefined,
    outcome: AcquireOutcome | ReleaseOutcome,
    error?: unknown,
  ): void {
    if (span === undefined) return;
    this.guard(() => {
      span.setAttribute('lock.outcome', outcome);
      if (this.fencingToken !== undefined) {
        span.setAttribute('lock.fencing_token', this.fencingToken);
      }
      if (outcome === 'error') {
        span.setStatus({
          code: this.telemetry.api.SpanStatusCode.ERROR,
          message: messageOf(error),
        });
      }
      span.end();
    });
  }

  /**
   * Runs `call` once, in `context`: a context manager that throws before or after the call
   * costs the trace, never the call nor its result.
   */
  private inContext<T>(context: Context, call: () => T): T {
    // Set inside the callback, where the compiler cannot follow it.
    let state = 'not run' as 'not run' | 'returned' | 'threw';
    let result: T | undefined;
    let thrown: unknown;
    this.guard(() =>
      this.telemetry.api.context.with(context, () => {
        try {
          result = call();
          state = 'returned';
        } catch (error) {
          thrown = error;
          state = 'threw';
        }
      }),
    );
    if (state === 'not run') return call();
    if (state === 'threw') throw thrown;
    return result as T;
  }

  private guard<T>(report: () => T): T | undefined {
    try {
      return report();
    } catch (error) {
      this.telemetry.failed(error);
      return undefined;
    }
  }
}
