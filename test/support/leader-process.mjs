/**
 * An app instance in a process of its own that stands in one leader election, for the tests of
 * what several replicas see of it: its own Nest application context (with shutdown hooks, as a
 * deployed app has), LockModule (Redis, ZooKeeper or PostgreSQL) and a provider whose
 * `@Leader` method reports each term to the test.
 *
 * Messages to the test, times on the machine's monotonic clock (`process.hrtime`: one clock
 * for every process of the machine, see test/safety/checker/first-attempts.mjs):
 * `{ type: 'booted' }`; `{ type: 'lead', epoch, at }` when a term begins; `{ type: 'abort',
 * epoch, at, reason }` when its signal aborts; `{ type: 'write', epoch, at }` every 25 ms from
 * the start of a term until 1.5 s after its signal aborted: a write to the test's fenced
 * resource with the term's epoch, sent whether or not the signal has aborted, so that the
 * resource's guard, not the leader's manners, has to refuse a deposed leader.
 * Messages from the test: `'resign'` (answered `{ type: 'resigned' }`), `'who'` (answered
 * `{ type: 'who', leader }`, what `LeaderService.leader` says). On SIGTERM, or when
 * the test disconnects, the app closes and the process exits.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`). The module
 * options come as JSON in LEADER_PROCESS_OPTIONS, the election's ttl in LEADER_TTL.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Leader, LeaderService, LockModule } from 'nestjs-redis-lock';

/** @type {unknown} */
const given = JSON.parse(process.env.LEADER_PROCESS_OPTIONS ?? '{}');
const options = /** @type {import('nestjs-redis-lock').LockModuleOptions} */ (given);
const ttl = Number(process.env.LEADER_TTL ?? 1_000);
const at = () => Number(process.hrtime.bigint()) / 1e6;
const send = (/** @type {object} */ message) => {
  // With a callback, a message the parent can no longer take (it is closing the channel) is
  // dropped instead of crashing this process with an unhandled EPIPE.
  if (process.connected) process.send?.(message, undefined, {}, () => undefined);
};

class Worker {
  /** @param {import('nestjs-redis-lock').Leadership} leadership */
  work(leadership) {
    const { epoch, signal } = leadership;
    send({ type: 'lead', epoch, at: at() });
    const writes = setInterval(() => send({ type: 'write', epoch, at: at() }), 25);
    signal.addEventListener(
      'abort',
      () => {
        send({ type: 'abort', epoch, at: at(), reason: String(signal.reason) });
        setTimeout(() => clearInterval(writes), 1_500);
      },
      { once: true },
    );
  }
}
Injectable()(Worker);
Leader('work', { ttl })(
  Worker.prototype,
  'work',
  /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(Worker.prototype, 'work')),
);

class InstanceModule {}
Module({ imports: [LockModule.forRoot(options)], providers: [Worker] })(InstanceModule);

const app = await NestFactory.createApplicationContext(InstanceModule, { logger: false });
app.enableShutdownHooks();
const leaders = app.get(LeaderService);

process.on('message', (message) => {
  if (message === 'resign') void leaders.resign('work').then(() => send({ type: 'resigned' }));
  if (message === 'who')
    void leaders.leader('work').then((leader) => send({ type: 'who', leader }));
});
process.on('disconnect', () => {
  void app.close().finally(() => process.exit(0));
});

send({ type: 'booted' });
