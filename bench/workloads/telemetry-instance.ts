/**
 * One process of the telemetry benchmark (bench/telemetry.ts), in the mode its first argument
 * names: `off` (started with `hide-otel-api.js`, so `@opentelemetry/api` cannot be found, as in
 * an app without it), `api` (the API with no SDK registered: its no-ops), `metrics` (the SDK's
 * MeterProvider alone, registered before the module boots, its reader exporting every second
 * into an exporter that drops what it gets), or `sdk` (that, and a TracerProvider with a batch
 * processor into such an exporter, and the AsyncLocalStorage context manager: an app with
 * metrics and tracing).
 *
 * It boots the library on the Redis at argv[3] and on the memory store, then runs rounds of
 * uncontended acquire + release when the parent asks, answering with the count of operations and
 * the Node CPU time they took.
 */
import 'reflect-metadata';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';
import { now } from '../stats.js';

export type TelemetryMode = 'off' | 'api' | 'metrics' | 'sdk';

/** What the parent asks: a round of `ms` on `store`, or to stop. */
export type InstanceRequest = { round: 'redis' | 'memory'; ms: number } | { stop: true };

/** One round's figures. */
export interface RoundResult {
  ops: number;
  ms: number;
  cpuUs: number;
}

@Module({})
class TelemetryBenchModule {}

async function registerSdk(withTraces: boolean): Promise<() => Promise<void>> {
  const { context, metrics, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { MeterProvider, PeriodicExportingMetricReader } =
    await import('@opentelemetry/sdk-metrics');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const dropping = {
    export: (_: unknown, done: (result: { code: 0 }) => void) => done({ code: 0 }),
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const meterProvider = new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({ exporter: dropping, exportIntervalMillis: 1_000 }),
    ],
  });
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(dropping)],
  });
  metrics.setGlobalMeterProvider(meterProvider);
  if (withTraces) {
    trace.setGlobalTracerProvider(tracerProvider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  return async () => {
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
  };
}

async function boot(store: 'redis' | 'memory', url: string): Promise<INestApplicationContext> {
  const options =
    store === 'redis'
      ? { redis: url, keyPrefix: `bench:otel:${process.pid}:` }
      : { store: 'memory' as const };
  return NestFactory.createApplicationContext(
    { module: TelemetryBenchModule, imports: [LockModule.forRoot(options)] },
    { logger: ['error', 'warn'] },
  );
}

async function round(locks: LockService, ms: number): Promise<RoundResult> {
  const started = now();
  const until = started + ms;
  const cpu = process.cpuUsage();
  let ops = 0;
  while (now() < until) {
    const lock = await locks.acquire('order:1');
    await lock.release();
    ops++;
  }
  const used = process.cpuUsage(cpu);
  return { ops, ms: now() - started, cpuUs: used.user + used.system };
}

async function main(): Promise<void> {
  const mode = process.argv[2] as TelemetryMode;
  const url = process.argv[3];
  const shutdownSdk =
    mode === 'sdk' || mode === 'metrics'
      ? await registerSdk(mode === 'sdk')
      : async () => undefined;
  const apps = { redis: await boot('redis', url), memory: await boot('memory', url) };
  const locks = { redis: apps.redis.get(LockService), memory: apps.memory.get(LockService) };
  // Warm-up: JIT, the scripts loaded into Redis, the first-call paths of every layer. One
  // using() turns on the promise hooks of AsyncLocalStorage in every mode, as in any app that
  // calls it or @WithLock (or propagates a trace context): the `sdk` process's context manager
  // would turn them on there alone, and charge their cost to telemetry.
  await locks.memory.using('warm-up', () => undefined);
  await round(locks.redis, 500);
  await round(locks.memory, 300);
  process.on('message', (request: InstanceRequest) => {
    if ('stop' in request) {
      void Promise.all([apps.redis.close(), apps.memory.close()])
        .then(shutdownSdk)
        .then(() => process.disconnect());
      return;
    }
    void round(locks[request.round], request.ms).then((result) => process.send!(result));
  });
  process.send!({ ready: true });
}

void main();
