import { CONFIG } from '../config.js';
import { sleep, sum } from '../stats.js';
import { countDelta, type CommandCounter } from './instrument.js';
import type { BenchClients } from './server.js';

/** Redis commands attributable to one lock implementation during a measured stretch. */
export interface CommandCount {
  /**
   * Every command Redis executed for the lock, from `INFO commandstats`: the ones clients sent
   * and the ones Lua scripts called inside Redis.
   */
  server: number;
  /** Commands the implementation's connections sent (a script call counts once). */
  sent: number;
  /** `server` by command name, for the JSON file. */
  serverByName: Record<string, number>;
}

/**
 * Runs `fn` and counts the Redis commands it caused. Implementations run one at a time, so the
 * server-wide deltas belong to the one measured, once the benchmark's own commands are taken
 * out: the `work` connection's (counted on our side, by name) and INFO (by name: only the
 * benchmark sends it once connections are up).
 */
export async function countCommands<T>(
  clients: BenchClients,
  lockCounter: CommandCounter,
  fn: () => Promise<T>,
  settleMs: number = CONFIG.settleMs,
): Promise<{ result: T; commands: CommandCount }> {
  const workBefore = clients.workCounter.snapshot();
  const sentBefore = lockCounter.sent;
  return countExecuted(
    clients,
    fn,
    () => ({
      lock: lockCounter.sent - sentBefore,
      benchmark: countDelta(workBefore, clients.workCounter.snapshot()),
    }),
    settleMs,
  );
}

/** What was sent during a measured stretch, as the senders counted it. */
export interface SentCount {
  /** Commands the measured lock's connections sent. */
  lock: number;
  /** Commands the benchmark's own connections sent, by name: taken out of Redis's counts. */
  benchmark: ReadonlyMap<string, number>;
}

/**
 * {@link countCommands} for senders that count elsewhere (other processes): `sent` is asked,
 * after `fn` and the settling pause, what was sent meanwhile.
 */
export async function countExecuted<T>(
  clients: BenchClients,
  fn: () => Promise<T>,
  sent: () => SentCount | Promise<SentCount>,
  settleMs: number = CONFIG.settleMs,
): Promise<{ result: T; commands: CommandCount }> {
  const serverBefore = await clients.commandStats();
  const result = await fn();
  // Let releases' late effects (an UNSUBSCRIBE, a cleanup) reach Redis before reading INFO.
  if (settleMs > 0) await sleep(settleMs);
  const { lock, benchmark } = await sent();
  const serverDelta = countDelta(serverBefore, await clients.commandStats());
  serverDelta.delete('info');
  for (const [name, calls] of benchmark) {
    serverDelta.set(name, (serverDelta.get(name) ?? 0) - calls);
  }
  return {
    result,
    commands: {
      server: sum([...serverDelta.values()]),
      sent: lock,
      serverByName: Object.fromEntries([...serverDelta].filter(([, calls]) => calls !== 0)),
    },
  };
}

export function addCounts(counts: readonly CommandCount[]): CommandCount {
  const byName: Record<string, number> = {};
  for (const count of counts) {
    for (const [name, calls] of Object.entries(count.serverByName)) {
      byName[name] = (byName[name] ?? 0) + calls;
    }
  }
  return {
    server: sum(counts.map((c) => c.server)),
    sent: sum(counts.map((c) => c.sent)),
    serverByName: byName,
  };
}
