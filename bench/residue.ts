/**
 * `npm run bench:residue`: what a lock leaves behind once released. An app that locks a new key
 * per request (`request:<n>`) locks and releases 180,000 distinct keys, 64 at a time, on a
 * throwaway Redis and then on the memory store; at the start, after 60,000 and after 180,000
 * keys, the report gives the keys in Redis and its `used_memory`, and the heap of the process
 * that runs the memory store (after a full GC). About 30 s. Markdown to stdout.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.apps.json).
import { LockModule, LockService, type LockModuleOptions } from 'nestjs-redis-lock';
import { closeClient } from './redis/server.js';
import { killAllServers, startServer, stopServer } from './redis/throwaway.js';

/** Distinct keys after which the residue is measured. */
const CHECKPOINTS = [60_000, 180_000];
/** Keys locked at once. */
const PARALLEL = 64;

@Module({})
class ResidueModule {}

interface Residue {
  /** Keys in Redis (none for the memory store). */
  keys?: number;
  /** Redis `used_memory`, or the memory store's heap, in bytes. */
  bytes: number;
}

/** Locks and releases `request:0`, `request:1`, … and measures at each checkpoint. */
async function measure(
  options: LockModuleOptions,
  look: () => Promise<Residue>,
): Promise<Residue[]> {
  const app = await NestFactory.createApplicationContext(
    { module: ResidueModule, imports: [LockModule.forRoot(options)] },
    { logger: ['error', 'warn'] },
  );
  const locks = app.get(LockService);
  const residues = [await look()];
  let next = 0;
  try {
    for (const checkpoint of CHECKPOINTS) {
      const worker = async () => {
        while (next < checkpoint) await locks.using(`request:${next++}`, () => undefined);
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      residues.push(await look());
      process.stderr.write(`  ${checkpoint.toLocaleString('en')} keys\n`);
    }
  } finally {
    await app.close();
  }
  return residues;
}

function heap(): number {
  // --expose-gc: two passes, so that what the first one freed is really gone.
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;

async function main(): Promise<void> {
  if (!globalThis.gc) throw new Error('run with node --expose-gc (npm run bench:residue does)');
  const server = await startServer();
  const admin = new Redis(server.url);
  try {
    process.stderr.write(`Redis at ${server.url}\n`);
    const redis = await measure({ redis: server.url }, async () => ({
      keys: await admin.dbsize(),
      bytes: Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]),
    }));
    process.stderr.write('Memory store\n');
    const memory = await measure({ store: 'memory' }, async () => ({ bytes: heap() }));
    const rows = [0, ...CHECKPOINTS].map(
      (n, i) =>
        `| ${n.toLocaleString('en')} | ${redis[i].keys?.toLocaleString('en')} | ${mib(redis[i].bytes)} | ${mib(memory[i].bytes)} |`,
    );
    process.stdout.write(
      [
        '| Distinct keys locked and released | Redis keys | Redis `used_memory` | Memory store: heap after GC |',
        '| ---: | ---: | ---: | ---: |',
        ...rows,
      ].join('\n') + '\n',
    );
  } finally {
    await closeClient(admin);
    await stopServer(server);
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAllServers();
    process.exit(130);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `Residue run failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  killAllServers();
  process.exitCode = 1;
});
