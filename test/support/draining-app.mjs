/**
 * An app instance that is deployed over while it works, for the shutdown tests: its own Nest
 * application (Express, or Fastify with DRAIN_ADAPTER=fastify) and LockModule on Redis or
 * ZooKeeper, with shutdown hooks on, as a process that Kubernetes sends SIGTERM to.
 *
 * `GET /jobs/:id` runs under `@WithLock('inline-job:<id>')` until the parent sends
 * `finish:<id>`; background work runs under the lock `background` until the parent sends
 * `finish-background` or its signal aborts. While either work runs, it keeps the marker key
 * `<prefix>inside:<name>` set in the marker Redis, so that another instance that gets the same
 * lock can tell whether it overlaps the work. The server keeps idle keep-alive connections open
 * for 60 s, as servers behind a load balancer are told to. Messages to the parent:
 * `{ booted: port }`, `{ jobStarted: id }`, `{ backgroundEnded: 'finished' | abort reason }`.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), as child
 * processes cannot run TypeScript through ts-jest. Configuration in the environment:
 * DRAIN_REDIS_URL or DRAIN_ZOOKEEPER (where the locks live), DRAIN_MARK_URL (the marker
 * Redis), DRAIN_KEY_PREFIX, DRAIN_ADAPTER, DRAIN_GRACE (shutdownGrace, optional).
 */
import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import { LockModule, LockService, WithLock } from 'nestjs-redis-lock';

const env = process.env;
const prefix = env.DRAIN_KEY_PREFIX ?? 'drain:';
const marks = new Redis(env.DRAIN_MARK_URL ?? '');

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

/** Runs `work` with the marker of `name` set. @param {string} name @param {() => Promise<unknown>} work */
async function marked(name, work) {
  await marks.set(`${prefix}inside:${name}`, '1');
  try {
    return await work();
  } finally {
    await marks.del(`${prefix}inside:${name}`);
  }
}

/** `@Param(name)` on parameter `index`, as TypeScript would apply it. */
function paramDecorator(/** @type {string} */ name, /** @type {number} */ index) {
  return (/** @type {object} */ target, /** @type {string | symbol} */ key) =>
    Param(name)(target, key, index);
}

class JobsController {
  job(/** @type {string} */ id) {
    return marked(`inline-job:${id}`, async () => {
      process.send?.({ jobStarted: id });
      await fromParent(`finish:${id}`);
      return { id, finished: true };
    });
  }
}
Object.defineProperty(
  JobsController.prototype,
  'job',
  Reflect.decorate(
    [Get('jobs/:id'), WithLock('inline-job:<id>'), paramDecorator('id', 0)],
    JobsController.prototype,
    'job',
    Object.getOwnPropertyDescriptor(JobsController.prototype, 'job'),
  ),
);
Controller()(JobsController);

const store = env.DRAIN_ZOOKEEPER
  ? { zookeeper: { connectionString: env.DRAIN_ZOOKEEPER, root: `/${prefix.replace(/\W/g, '')}` } }
  : { redis: env.DRAIN_REDIS_URL };
const grace = env.DRAIN_GRACE ? { shutdownGrace: Number(env.DRAIN_GRACE) } : {};

/** Closes the marker connection once the app has shut down, as an app closes its own. */
class MarkerConnection {
  onApplicationShutdown() {
    return marks.quit();
  }
}
Injectable()(MarkerConnection);

class DrainingModule {}
Module({
  imports: [LockModule.forRoot({ ...store, ...grace, keyPrefix: prefix })],
  controllers: [JobsController],
  providers: [MarkerConnection],
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
  .using('background', (/** @type {import('nestjs-redis-lock').Lock} */ lock) =>
    marked('background', async () => {
      held();
      const finished = fromParent('finish-background');
      const abort = new Promise((resolve) =>
        lock.signal.addEventListener('abort', resolve, { once: true }),
      );
      await Promise.race([finished, abort]);
      /** @type {unknown} */
      const reason = lock.signal.reason;
      process.send?.({ backgroundEnded: reason instanceof Error ? reason.message : 'finished' });
    }),
  )
  .catch(() => undefined);
await holding;
process.send?.({ booted: port });
