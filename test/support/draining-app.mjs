/**
 * An HTTP app that is asked to stop while a client's request is still in flight and while
 * background work holds a lock, for the test of the shutdown order: its own Nest application
 * (Express, or Fastify with DRAIN_ADAPTER=fastify) and LockModule, with shutdown hooks on.
 *
 * `GET /slow` answers only when the parent sends `finish`, which keeps the HTTP server
 * draining after SIGTERM. The background work runs under the lock DRAIN_KEY until its signal
 * aborts. Messages to the parent: `{ booted: port }`, `{ slowStarted: true }`, `{ aborted:
 * reason }`, `{ usingRejected: error name }`.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), as child
 * processes cannot run TypeScript through ts-jest. Configuration in the environment:
 * DRAIN_REDIS_URL, DRAIN_KEY_PREFIX, DRAIN_KEY, DRAIN_ADAPTER.
 */
import 'reflect-metadata';
import { once } from 'node:events';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LockModule, LockService } from 'nestjs-redis-lock';

const env = process.env;

class SlowController {
  async slow() {
    process.send?.({ slowStarted: true });
    await once(process, 'message');
    return { finished: true };
  }
}
Object.defineProperty(
  SlowController.prototype,
  'slow',
  Reflect.decorate(
    [Get('slow')],
    SlowController.prototype,
    'slow',
    Object.getOwnPropertyDescriptor(SlowController.prototype, 'slow'),
  ),
);
Controller()(SlowController);

class DrainingModule {}
Module({
  imports: [LockModule.forRoot({ redis: env.DRAIN_REDIS_URL, keyPrefix: env.DRAIN_KEY_PREFIX })],
  controllers: [SlowController],
})(DrainingModule);

const app =
  env.DRAIN_ADAPTER === 'fastify'
    ? await NestFactory.create(DrainingModule, new FastifyAdapter(), { logger: false })
    : await NestFactory.create(DrainingModule, { logger: false });
app.enableShutdownHooks();
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
