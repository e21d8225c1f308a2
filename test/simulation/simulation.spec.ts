import { jest } from '@jest/globals';
import { runSeed } from './run-seed.js';
import { simZooKeeperClient } from './zk-client.js';

// Jest keeps a module registry of its own: the ZooKeeper store's require finds the simulated
// client there (see zk-backend.ts for plain Node).
jest.mock('node-zookeeper-client', () => simZooKeeperClient);

/** How many seeds the quick tier runs; `npm run simulate -- --seeds N` runs more. */
const SEEDS = 200;

/**
 * The engine, with its watchdog, waiting and shutdown, against the simulated store in virtual
 * time: every seed's run keeps every invariant (see docs/simulation.md), and a seed replays
 * the same run, event for event.
 */
describe('the simulated lock protocol', () => {
  it(`keeps every invariant over ${SEEDS} seeds`, async () => {
    const broken: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { violation } = await runSeed(seed);
      if (violation) broken.push(`seed ${seed}: ${violation.invariant}: ${violation.detail}`);
    }
    expect(broken).toEqual([]);
  }, 300_000);

  it('keeps every invariant on the seeds that found defects', async () => {
    // 247: a first key's validity ran out while the second was taken (valid when granted);
    // it fails with the re-ask of stale keys taken out. (The other defects the simulation found
    // have unit or integration specs of their own: their runs came before the workload changed.)
    for (const seed of [247]) {
      expect([seed, (await runSeed(seed)).violation]).toEqual([seed, undefined]);
    }
  });

  it('replays a seed with the same trace, byte for byte', async () => {
    // Seed 2 runs on the ZooKeeper-like server; seed 10's store fails over, seed 21's restarts.
    for (const seed of [2, 3, 10, 11, 21, 2024]) {
      const first = await runSeed(seed, true);
      const second = await runSeed(seed, true);
      expect(first.trace.length).toBeGreaterThan(20);
      expect(second.trace.join('\n')).toBe(first.trace.join('\n'));
    }
  });
});
