import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/** Injection token of the {@link PrometheusExporter} that `GET /metrics` serves. */
export const PROMETHEUS_EXPORTER = Symbol('sample:prometheus-exporter');

let exporter: PrometheusExporter | undefined;

/**
 * The process's OpenTelemetry meter provider, read by a Prometheus exporter and registered
 * globally: once per process, and before `LockModule` boots, which takes the providers
 * registered at that moment. An app with the OpenTelemetry Node SDK does the same with
 * `new NodeSDK({ metricReader: new PrometheusExporter(...) }).start()` before it creates the
 * Nest app.
 */
export function prometheusMetrics(): PrometheusExporter {
  if (!exporter) {
    // No server of its own: the app serves the metrics on its own port (MetricsController).
    exporter = new PrometheusExporter({ preventServerStart: true });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  }
  return exporter;
}
