import { context, metrics, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** A reader that exports nothing by itself: the test collects when it wants to look. */
class ManualReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** One instrument as collected: its unit and data points. */
export interface Collected {
  unit: string;
  type: DataPointType;
  points: DataPoint<number | Histogram>[];
}

/**
 * The real OpenTelemetry SDK, registered as the global meter and tracer providers and context
 * manager of this test file (Jest gives every file globals of its own), as an app would register
 * it before it boots. {@link stop} unregisters everything.
 */
export class OtelSdk {
  readonly spans = new InMemorySpanExporter();
  private readonly reader = new ManualReader();
  private readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  private readonly tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(this.spans)],
  });
  private readonly contextManager = new AsyncLocalStorageContextManager().enable();

  static start(): OtelSdk {
    const sdk = new OtelSdk();
    metrics.setGlobalMeterProvider(sdk.meterProvider);
    trace.setGlobalTracerProvider(sdk.tracerProvider);
    context.setGlobalContextManager(sdk.contextManager);
    return sdk;
  }

  /** Every instrument of the library's meter, by name. */
  async collect(): Promise<Map<string, Collected>> {
    const { resourceMetrics, errors } = await this.reader.collect();
    if (errors.length > 0) throw errors[0];
    const scope = resourceMetrics.scopeMetrics.find((s) => s.scope.name === 'nestjs-redis-lock');
    return new Map(
      (scope?.metrics ?? []).map((metric: MetricData) => [
        metric.descriptor.name,
        {
          unit: metric.descriptor.unit,
          type: metric.dataPointType,
          points: metric.dataPoints as DataPoint<number | Histogram>[],
        },
      ]),
    );
  }

  /**
   * The points of `instrument` whose attributes include `match`: for a histogram, how many
   * values were recorded; for a counter, its value.
   */
  async values(
    instrument: string,
    match: Attributes,
  ): Promise<{ attributes: Attributes; value: number }[]> {
    const collected = (await this.collect()).get(instrument);
    return (collected?.points ?? [])
      .filter((point) => Object.entries(match).every(([k, v]) => point.attributes[k] === v))
      .map((point) => ({
        attributes: point.attributes,
        value: typeof point.value === 'number' ? point.value : point.value.count,
      }));
  }

  /** The sum of {@link values}. */
  async total(instrument: string, match: Attributes): Promise<number> {
    return (await this.values(instrument, match)).reduce((sum, { value }) => sum + value, 0);
  }

  /** The finished spans named `name`, optionally of lock `lockName`. */
  finished(name: string, lockName?: string): ReadableSpan[] {
    return this.spans
      .getFinishedSpans()
      .filter(
        (s) =>
          s.name === name && (lockName === undefined || s.attributes['lock.name'] === lockName),
      );
  }

  async stop(): Promise<void> {
    metrics.disable();
    trace.disable();
    context.disable();
    await this.meterProvider.shutdown();
    await this.tracerProvider.shutdown();
  }
}
