/**
 * An app instance in a process of its own that holds a lock and leads an election, for the
 * test that pauses it (SIGSTOP) past their ttl: what its own code sees at its first look after
 * the pause, before any of the library's timers could tell it.
 *
 * Once it holds the lock `paused` and leads `paused`, it sends `{ type: 'holding' }`, and looks
 * every 5 ms (an app timer, as a consumer's poll loop would be). The first look that comes more
 * than the ttl after the one before it (the process was paused in between) is reported as
 * `{ type: 'woke', gapMs, lockLost, lockSignalAborted, leadershipLost, leadershipSignalAborted,
 * isLeader }`: whether `throwIfLost()` threw, and whether the signals had already aborted when
 * it looked. Then it closes its app and exits.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`). The Redis URL
 * and key prefix come in PAUSED_REDIS_URL and PAUSED_PREFIX.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Leader, LeaderService, LockModule, LockService } from 'nestjs-redis-lock';

const TTL = 1_000;

/** @type {(leadership: import('nestjs-redis-lock').Leadership) => void} */
let onLead = () => undefined;
/** @type {Promise<import('nestjs-redis-lock').Leadership>} */
const leading = new Promise((resolve) => (onLead = resolve));

class Worker {
  /** @param {import('nestjs-redis-lock').Leadership} leadership */
  work(leadership) {
    onLead(leadership);
  }
}
Injectable()(Worker);
Leader('paused', { ttl: TTL })(
  Worker.prototype,
  'work',
  /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(Worker.prototype, 'work')),
);

class InstanceModule {}
Module({
  imports: [
    LockModule.forRoot({
      redis: process.env.PAUSED_REDIS_URL,
      keyPrefix: process.env.PAUSED_PREFIX,
      ttl: TTL,
    }),
  ],
  providers: [Worker],
})(InstanceModule);

const app = await NestFactory.createApplicationContext(InstanceModule, { logger: false });
const locks = app.get(LockService);
const leaders = app.get(LeaderService);
const lock = await locks.acquire('paused');
const leadership = await leading;

/** Whether `check` threw a LockLostError. */
const throws = (/** @type {() => void} */ check) => {
  try {
    check();
    return false;
  } catch (error) {
    return error instanceof Error && error.name === 'LockLostError';
  }
};

let last = performance.now();
const looks = setInterval(() => {
  const now = performance.now();
  const gapMs = now - last;
  last = now;
  // Not paused (a loaded machine's stall short of the ttl may still cost the lock: what is
  // asserted is the look after the pause).
  if (gapMs <= TTL) return;
  clearInterval(looks);
  // Read the signals first: throwIfLost must not need them to have aborted.
  const lockSignalAborted = lock.signal.aborted;
  const leadershipSignalAborted = leadership.signal.aborted;
  process.send?.({
    type: 'woke',
    gapMs: Math.round(gapMs),
    lockSignalAborted,
    leadershipSignalAborted,
    lockLost: throws(() => lock.throwIfLost()),
    leadershipLost: throws(() => leadership.throwIfLost()),
    isLeader: leaders.isLeader('paused'),
  });
  void app.close().finally(() => process.exit(0));
}, 5);

process.send?.({ type: 'holding' });
process.on('disconnect', () => {
  void app.close().finally(() => process.exit(0));
});
