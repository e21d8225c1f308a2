import { slotOf } from './cluster-slots.js';
import type { RenewalEntry } from '../lock-store.interface.js';
import type { KindScripts } from './redis-kinds.js';
import type { TimedCommand } from '../timed-command.js';

/** Keys per renewal script call, so that one call never blocks Redis for long. */
const RENEW_CHUNK = 500;
/**
 * Renewal calls written in one turn of the event loop: up to 2,000 locks due renew in one
 * pipelined round trip, and more never hold the loop for longer than a few milliseconds.
 */
const CHUNKS_PER_TURN = 4;

/**
 * Renews many locks at once (the watchdog's batch): in chunks of {@link RENEW_CHUNK} keys, all
 * sent without waiting for each other's replies, so that they share round trips. A script's
 * keys must share one hash slot on a Cluster, so there the chunks are cut per slot (the client
 * still pipelines the calls to each node).
 * @returns one entry per entry of `entries`, in their order: whether it was renewed, or
 *   `undefined` when its node failed while another answered (Cluster)
 */
export async function renewInChunks(
  scripts: KindScripts,
  command: TimedCommand,
  cluster: boolean,
  entries: readonly RenewalEntry[],
): Promise<(boolean | undefined)[]> {
  const batches = cluster ? [...groupBySlot(entries).values()] : [entries];
  const calls: Promise<boolean[]>[] = [];
  const sizes: number[] = [];
  for (const batch of batches) {
    for (let i = 0; i < batch.length; i += RENEW_CHUNK) {
      // Writing a chunk's command takes the event loop most of a millisecond: with many locks
      // due at once, let the application's other work run between runs of chunks. A chunk
      // that fails meanwhile is not an unhandled rejection: Promise.all below has it.
      if (calls.length > 0 && calls.length % CHUNKS_PER_TURN === 0) {
        await new Promise(setImmediate);
      }
      const chunk = batch.slice(i, i + RENEW_CHUNK);
      const call = command(chunk[0].key, 'renew', () => scripts.renew(chunk));
      call.catch(() => undefined);
      calls.push(call);
      sizes.push(chunk.length);
    }
  }
  if (!cluster) return (await Promise.all(calls)).flat();
  // A node that fails (a failover, a timeout) leaves its slots' locks undecided, for the
  // watchdog to try again, and the other nodes' answers still count.
  const settled = await Promise.allSettled(calls);
  if (settled.every((call) => call.status === 'rejected')) throw settled[0].reason;
  const replies = settled.flatMap((call, i) =>
    call.status === 'fulfilled' ? call.value : Array<undefined>(sizes[i]).fill(undefined),
  );
  // The replies come in slot order: put them back in the order of the entries.
  const renewed = new Map(batches.flat().map((entry, i) => [entry, replies[i]]));
  return entries.map((entry) => renewed.get(entry));
}

function groupBySlot(entries: readonly RenewalEntry[]): Map<number, RenewalEntry[]> {
  const slots = new Map<number, RenewalEntry[]>();
  for (const entry of entries) {
    const slot = slotOf(entry.key);
    const batch = slots.get(slot);
    if (batch) batch.push(entry);
    else slots.set(slot, [entry]);
  }
  return slots;
}
