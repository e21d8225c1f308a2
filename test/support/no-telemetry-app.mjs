/**
 * A separate process that boots two lock modules on the memory store and takes locks, for the
 * spec of an app without `@opentelemetry/api` (started with `hide-opentelemetry-api.mjs`).
 * Reports `{ fencingTokens, lookups, warnings }`: the tokens of the locks it took, how many
 * times the library looked for the API, and what it logged as warnings.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because
 * child processes cannot run TypeScript through ts-jest.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

class AppModule {}
Module({ imports: [LockModule.forRoot({ store: 'memory' })] })(AppModule);

/** @type {string[]} */
const warnings = [];
const logger = {
  log: () => undefined,
  error: (/** @type {unknown} */ message) => warnings.push(String(message)),
  warn: (/** @type {unknown} */ message) => warnings.push(String(message)),
};
const apps = [
  await NestFactory.createApplicationContext(AppModule, { logger }),
  await NestFactory.createApplicationContext(AppModule, { logger }),
];
const [locks] = apps.map((app) => app.get(LockService));
const first = await locks.acquire('order:1', { label: 'orders' });
const busy = await locks.tryAcquire('order:1');
await first.release();
const second = await locks.using('order:1', (lock) => lock.fencingToken);
for (const app of apps) await app.close();
process.send?.({
  fencingTokens: [first.fencingToken, second],
  busy,
  lookups: /** @type {{ openTelemetryLookups?: number }} */ (globalThis).openTelemetryLookups,
  warnings,
});
