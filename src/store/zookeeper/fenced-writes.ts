import type { FencedWriteOutcome } from '../lock-store.interface.js';
import type { LockNodes } from './lock-nodes.js';
import type { ZooKeeperNodes } from './zookeeper-nodes.js';

/** What a fenced resource's node holds, as JSON. */
interface FencedValue {
  fencingToken: number;
  value: string;
}

/**
 * Writes `value` to the fenced resource's node at `path` if `fencingToken` is at least the
 * highest token written there. The node holds the value and that token, and is replaced only by
 * a write that presents the version it read: a write that lost a race reads again.
 */
export async function writeFenced(
  nodes: ZooKeeperNodes,
  lockNodes: LockNodes,
  path: string,
  { fencingToken, value }: FencedValue,
): Promise<FencedWriteOutcome> {
  const data = Buffer.from(JSON.stringify({ fencingToken, value }));
  await lockNodes.ensureRoot();
  for (;;) {
    const current = await nodes.read(path);
    if (current === undefined) {
      if (await nodes.created(path, data)) return { written: true };
      continue;
    }
    const highestSeen = (JSON.parse(current.data.toString()) as FencedValue).fencingToken;
    if (fencingToken < highestSeen) return { written: false, highestSeen };
    if (await nodes.replaced(path, data, current.version)) return { written: true };
  }
}
