/**
 * One replica of an app with a scheduled job under `@WithLock`, as users deploy it: its own Nest
 * application context, `ScheduleModule` and `LockModule` (its own connections). Every run of the
 * job appends `<ms since the epoch>:<pid>` to the Redis list REPLICA_RUNS as it starts, by the
 * machine's clock even when the replica's own `Date` is offset (see clock-offset.mjs).
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), as child
 * processes cannot run TypeScript through ts-jest; decorators are applied with
 * `Reflect.decorate`, in the order a class body would list them. Configuration in the
 * environment: REPLICA_REDIS_URL, REPLICA_KEY_PREFIX, REPLICA_RUNS, REPLICA_SCHEDULE (`cron`:
 * every 2 s on the clock; `interval`: every 2 s from boot), REPLICA_ORDER (`schedule-first`:
 * the schedule's decorator above `@WithLock`; `lock-first`: below it) and REPLICA_LOCKED
 * (`false`: no `@WithLock`, to show what the lock prevents); REPLICA_ZOOKEEPER (a connection
 * string: the locks live in ZooKeeper, under REPLICA_ZOOKEEPER_ROOT), REPLICA_POSTGRES (a URL: the
 * locks live in PostgreSQL), REPLICA_REDLOCK (comma-separated master URLs: RedLock over them)
 * and REPLICA_HOLD_FOR (ms, default 1 500).
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { LockModule, WithLock } from 'nestjs-redis-lock';

const env = process.env;
const PERIOD = 2_000;
const records = new Redis(env.REPLICA_REDIS_URL ?? '');

class Report {
  async build() {
    const at = Math.round(performance.timeOrigin + performance.now());
    await records.rpush(env.REPLICA_RUNS ?? 'runs', `${at}:${process.pid}`);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the job's work
  }
}
const schedule =
  env.REPLICA_SCHEDULE === 'interval' ? Interval(PERIOD) : Cron(`*/${PERIOD / 1000} * * * * *`);
// ShedLock's lockAtLeastFor is holdFor: shorter than the period, longer than the replicas'
// schedules can drift apart, so that a replica that fires late still finds the lock taken.
const holdFor = Number(env.REPLICA_HOLD_FOR ?? PERIOD * 0.75);
const lock = WithLock('report', { onLocked: 'skip', holdFor });
const decorators =
  env.REPLICA_LOCKED === 'false'
    ? [schedule]
    : env.REPLICA_ORDER === 'lock-first'
      ? [lock, schedule]
      : [schedule, lock];
// Reflect.decorate returns the descriptor; a class body would define it on the prototype.
Object.defineProperty(
  Report.prototype,
  'build',
  Reflect.decorate(
    decorators,
    Report.prototype,
    'build',
    Object.getOwnPropertyDescriptor(Report.prototype, 'build'),
  ),
);
Injectable()(Report);

class ReplicaModule {}
Module({
  imports: [
    ScheduleModule.forRoot(),
    LockModule.forRoot({
      ...(env.REPLICA_ZOOKEEPER
        ? {
            zookeeper: {
              connectionString: env.REPLICA_ZOOKEEPER,
              root: env.REPLICA_ZOOKEEPER_ROOT,
            },
          }
        : env.REPLICA_POSTGRES
          ? { postgres: env.REPLICA_POSTGRES }
          : { redis: env.REPLICA_REDLOCK?.split(',') ?? env.REPLICA_REDIS_URL }),
      keyPrefix: env.REPLICA_KEY_PREFIX,
    }),
  ],
  providers: [Report],
})(ReplicaModule);

const app = await NestFactory.createApplicationContext(ReplicaModule, { logger: false });
app.enableShutdownHooks();
process.on('disconnect', () => void app.close().finally(() => records.quit()));
process.send?.({ booted: true });
