/**
 * Workload 6 alone (`npm run bench:held`): this library holding 100,000 locks with the
 * watchdog on, and what renewing them costs the event loop, beside the floor's bare locks.
 * Prints the result as JSON; `npm run bench` runs the same workload among all the others.
 */
import { RawFloorAdapter } from './adapters/raw-floor.js';
import { ThisLibraryAdapter } from './adapters/this-library.js';
import { BenchClients, startRedis } from './redis/server.js';
import { runHeldLocks } from './workloads/held-locks.js';

async function main(): Promise<void> {
  const redis = await startRedis();
  const clients = new BenchClients(redis.url);
  await clients.connect();
  const library = await ThisLibraryAdapter.create(redis.url);
  const floor = await RawFloorAdapter.create(redis.url);
  try {
    const held = await runHeldLocks(library, floor, clients);
    const { renewal, ...memory } = held.library;
    const { eventLoopDelay, lost, locksPerRenewalRequest, ticks } = renewal;
    const summary = { memory, floor: held.floor, eventLoopDelay, lost, locksPerRenewalRequest };
    process.stdout.write(`${JSON.stringify({ ...summary, ticks }, null, 2)}\n`);
  } finally {
    await library.close();
    await floor.close();
    await clients.close();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
