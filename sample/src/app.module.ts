import {
  Module,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type Provider,
} from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LockModule } from 'nestjs-redis-lock';
import { servedBy } from './common/served-by.middleware.js';
import { HealthController } from './health/health.controller.js';
import { LotteryController } from './lottery/lottery.controller.js';
import { LotteryService } from './lottery/lottery.service.js';
import { MetricsController } from './metrics/metrics.controller.js';
import { PROMETHEUS_EXPORTER, prometheusMetrics } from './metrics/prometheus-metrics.js';
import { ProductsController } from './products/products.controller.js';
import { ProductsService } from './products/products.service.js';
import { MemoryStateStore } from './state/memory-state.store.js';
import { RedisStateStore } from './state/redis-state.store.js';
import { STATE_STORE } from './state/state-store.js';
import { SubmissionsController } from './submissions/submissions.controller.js';
import { SubmissionsService } from './submissions/submissions.service.js';

export interface AppOptions {
  /**
   * Redis for locks and data, shared by every process of the app. Without it, both live in
   * this process: fine for trying the app out, but locks then exclude nobody else.
   */
  redisUrl?: string;
  /** Prefix of every Redis key the app writes. Default `'sample:'`. */
  keyPrefix?: string;
}

const controllers = [LotteryController, SubmissionsController, ProductsController];

/**
 * The sample application: a lottery, a submission throttle and a slow product editor, each
 * protected by `@WithLock`, and a `/health` route for probes.
 *
 * @example
 * ```ts
 * NestFactory.create(AppModule.forRoot({ redisUrl: process.env.REDIS_URL }));
 * ```
 */
@Module({})
export class AppModule implements NestModule {
  static forRoot({ redisUrl, keyPrefix = 'sample:' }: AppOptions = {}): DynamicModule {
    // Before LockModule boots: it takes the meter provider registered then (see GET /metrics).
    const metrics: Provider = { provide: PROMETHEUS_EXPORTER, useValue: prometheusMetrics() };
    const locks = redisUrl
      ? LockModule.forRoot({ redis: redisUrl, keyPrefix: `${keyPrefix}lock:` })
      : LockModule.forRoot({ store: 'memory' });
    const state: Provider = {
      provide: STATE_STORE,
      useFactory: () =>
        redisUrl ? new RedisStateStore(redisUrl, `${keyPrefix}state:`) : new MemoryStateStore(),
    };
    return {
      module: AppModule,
      imports: [locks, TerminusModule.forRoot({ logger: false })],
      controllers: [...controllers, MetricsController, HealthController],
      providers: [state, metrics, LotteryService, SubmissionsService, ProductsService],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(servedBy).forRoutes(...controllers, MetricsController);
  }
}
