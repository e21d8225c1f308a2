import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROMETHEUS_EXPORTER } from './prometheus-metrics.js';

/** `GET /metrics`: the locks' metrics (and any others of the process) for Prometheus to scrape. */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(PROMETHEUS_EXPORTER) private readonly exporter: PrometheusExporter) {}

  @Get()
  scrape(@Req() request: IncomingMessage, @Res() response: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(request, response);
  }
}
