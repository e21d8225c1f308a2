import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockHealthIndicator } from 'nestjs-redis-lock';

/**
 * `GET /health`: 200 while the lock store answers, 503 when it does not, with the backend and
 * the latency of its round trip, for a load balancer or Kubernetes probe.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy()]);
  }
}
