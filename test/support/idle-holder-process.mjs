/**
 * An app that holds many locks on the memory store and then does nothing but wait, with one
 * timer: nothing but the library's own work wakes its event loop. It reports
 * `{ held, lost }` once the wait is over, then releases them, closes and exits. LOCK_COUNT, LOCK_TTL and
 * IDLE_MS come from the environment.
 *
 * Plain ESM JavaScript importing the BUILT library by its package name (`dist/`), because child
 * processes cannot run TypeScript through ts-jest.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from 'nestjs-redis-lock';

const count = Number(process.env.LOCK_COUNT);
const ttl = Number(process.env.LOCK_TTL);
class IdleModule {}
Module({ imports: [LockModule.forRoot({ store: 'memory', ttl })] })(IdleModule);
const app = await NestFactory.createApplicationContext(IdleModule, { logger: false });
const locks = app.get(LockService);
const held = await Promise.all(Array.from({ length: count }, (_, i) => locks.acquire(`idle:${i}`)));
await new Promise((resolve) => setTimeout(resolve, Number(process.env.IDLE_MS)));
const lost = held.filter((lock) => lock.signal.aborted).length;
await Promise.all(held.map((lock) => lock.release()));
process.send?.({ held: held.length, lost });
await app.close();
process.disconnect?.();
