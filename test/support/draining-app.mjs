/**
 * An HTTP app that is asked to stop while a client's request is still in flight and while
 * background work holds a lock, for the test of the shutdown order: its own Nest application
 * (Express, or Fastify with DRAIN_ADAPTER=fastify) and LockModule, with shutdown hooks on.
 *
 * `GET /slow` answers only when the parent sends `finish`, which keeps the HTTP server
 * draining after SIGTERM; `GET /orders/:id` runs under the lock `order:<id>`. The background
 * work runs under the lock DRAIN_KEY until its signal aborts. Shutdown waits in a grace period,
 * after the lock service's `beforeApplicationShutdown` and before the server closes, until the
 * parent sends `leave`, as an app behind a load balancer waits for it to stop sending requests
 * (Terminus's `gracefulShutdownTimeoutMs`, say). The server keeps idle keep-alive connections
 * open for 60 s, as servers behind a load balancer are told to. Messages to the parent:
 * `{ booted: port }`, `{ slowStarted: true }`, `{ aborted: reason }`, `{ usingRejected: error
 * name }`.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), as child
 * processes cannot run TypeScript through ts-jest. Configuration in the environment:
 * DRAIN_REDIS_URL, DRAIN_KEY_PREFIX, DRAIN_KEY, DRAIN_ADAPTER.
 */
import 'reflect-metadata';
import { once } from 'node:events';
import { Controller, Get, Injectable, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LockModule, LockService, WithLock } from 'nestjs-redis-lock';

const env = process.env;

/** Resolves when the parent sends `name`. @param {string} name */
function fromParent(name) {
  return new Promise((resolve) => {
    const listener = (/** @type {unknown} */ message) => {
      if (message !== name) return;
      process.off('message', listener);
      resolve(undefined);
    };
    process.on('message', listener);
  });
}

class SlowController {
  async slow() {
    process.send?.({ slowStarted: true });
    await fromParent('finish');
    return { finished: true };
  }

  order(/** @type {string} */ id) {
    return { id };
  }
}
for (const [method, decorators] of Object.entries({
  slow: [Get('slow')],
  order: [Get('orders/:id'), WithLock('order:<id>'), (target, key) => Param('id')(target, key, 0)],
})) {
  Object.defineProperty(
    SlowController.prototype,
    method,
    Reflect.decorate(
      decorators,
      SlowController.prototype,
      method,
      Object.getOwnPropertyDescriptor(SlowController.prototype, method),
    ),
  );
}
Controller()(SlowController);

class GracePeriod {
  beforeApplicationShutdown() {
    return fromParent('leave');
  }
}
Injectable()(GracePeriod);
class GracePeriodModule {}
Module({ providers: [GracePeriod] })(GracePeriodModule);

class DrainingModule {}
Module({
  // Nest runs the shutdown hooks of modules imported side by side in the reverse order: the
  // lock service stops before the grace period begins.
  imports: [
    GracePeriodModule,
    LockModule.forRoot({ redis: env.DRAIN_REDIS_URL, keyPrefix: env.DRAIN_KEY_PREFIX }),
  ],
  controllers: [SlowController],
})(DrainingModule);

const app =
  env.DRAIN_ADAPTER === 'fastify'
    ? await NestFactory.create(DrainingModule, new FastifyAdapter(), { logger: false })
    : await NestFactory.create(DrainingModule, { logger: false });
app.enableShutdownHooks();
Object.assign(app.getHttpServer(), { keepAliveTimeout: 60_000 });
await app.listen(0, '127.0.0.1');
const port = Number(new URL(await app.getUrl()).port);

const locks = app.get(LockService);
/** @type {(value?: unknown) => void} */
let held = () => undefined;
const holding = new Promise((resolve) => (held = resolve));
locks
  .using(env.DRAIN_KEY ?? 'job', async (lock) => {
    held();
    // Background work that stops when it is told its lock is gone.
    if (!lock.signal.aborted) await once(lock.signal, 'abort');
    const lost = lock.signal.reason instanceof Error ? lock.signal.reason.message : 'no reason';
    process.send?.({ aborted: lost });
  })
  .catch((/** @type {Error} */ error) => process.send?.({ usingRejected: error.name }));
await holding;
process.send?.({ booted: port });
