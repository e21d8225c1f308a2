import type { TestingModule } from '@nestjs/testing';
import { LockModule, LockService } from '../../src/index.js';
import { LockLifecycle } from '../../src/lock.lifecycle.js';
import { sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

/**
 * What every context spec locks: `order:<id>` is a plain lock, `submit:<id>` a `holdFor`
 * throttle of {@link SUBMIT_WINDOW_MS}. Each context has its own handlers on these keys.
 */
export const SUBMIT_WINDOW_MS = 5_000;

/** The `LockModule` of one spec: the shared test Redis, under a prefix of its own. */
export const lockModule = () =>
  LockModule.forRoot({ redis: sharedRedisUrl(), keyPrefix: uniquePrefix() });

/** Runs `work` while `order:<id>` is held from outside the handlers, as another replica would. */
export async function whileOrderHeld(
  module: TestingModule,
  id: string,
  work: () => Promise<void>,
): Promise<void> {
  const held = await module.get(LockService).acquire(`order:${id}`);
  try {
    await work();
  } finally {
    await held.release();
  }
}

/** The message of a `@WithLock` call that found `order:<id>` held (it does not wait). */
export const conflictMessage = (id: string) =>
  `Lock "order:${id}" is held by another owner; gave up after waiting 0 ms`;

/** Matches any number (jest types its matchers as `any`; this one is only compared). */
export const anyNumber: unknown = expect.any(Number);

/** The message of a `@WithLock` call that found the `submit:<id>` throttle closed. */
export const throttleMessage = (id: string): unknown =>
  expect.stringMatching(
    new RegExp(`^Lock "submit:${id}" is a throttle that is still closed; retry in \\d+ ms$`),
  );

/** The body of an HTTP 409 for `order:<id>`; RPC and WebSocket payloads carry it too. */
export const conflictBody = (id: string) => ({
  statusCode: 409,
  error: 'Conflict',
  code: 'LOCK_CONFLICT',
  message: conflictMessage(id),
});

/** The body of an HTTP 429 for `submit:<id>`; RPC and WebSocket payloads carry it too. */
export const throttleBody = (id: string) => ({
  statusCode: 429,
  error: 'Too Many Requests',
  code: 'LOCK_THROTTLED',
  message: throttleMessage(id),
  retryAfterMs: anyNumber,
});

/**
 * Makes the app's lock module stop taking locks, as its `beforeApplicationShutdown` hook does
 * when the app begins to shut down while its servers still answer. For good: the last test of a
 * spec.
 */
export const beginShutdown = (module: TestingModule) =>
  module.get(LockLifecycle).beforeApplicationShutdown();

/** The message of a call refused on `order:<id>` because the instance is shutting down. */
export const shuttingDownMessage = (id: string) =>
  `Lock "order:${id}" was not taken: the lock service of this instance is shutting down; ` +
  'retry on another instance';

/** The body of an HTTP 503 for `order:<id>`; RPC and WebSocket payloads carry it too. */
export const shuttingDownBody = (id: string) => ({
  statusCode: 503,
  error: 'Service Unavailable',
  code: 'LOCK_SHUTTING_DOWN',
  message: shuttingDownMessage(id),
});

/** A throttle's retry-after: what is left of the window, so within it. */
export const withinWindow = (ms: unknown) => {
  expect(ms).toEqual(expect.any(Number));
  expect(ms).toBeGreaterThan(0);
  expect(ms).toBeLessThanOrEqual(SUBMIT_WINDOW_MS);
};
