import { slotOf } from '../../src/store/redis/cluster-slots.js';
import type { RenewalEntry } from '../../src/store/lock-store.interface.js';
import type { KindScripts } from '../../src/store/redis/redis-kinds.js';
import { renewInChunks } from '../../src/store/redis/redis-renewals.js';
import { timedCommand } from '../../src/store/timed-command.js';

/** Renewals on a Cluster one of whose nodes fails: the slots of `failing` keys reject. */
function renewing(failing: (key: string) => boolean, cluster: boolean, keys: string[]) {
  const scripts = {
    renew: (chunk: readonly RenewalEntry[]) =>
      failing(chunk[0].key)
        ? Promise.reject(new Error('CLUSTERDOWN The cluster is down'))
        : Promise.resolve(chunk.map((entry) => !entry.key.endsWith(':gone'))),
  } as unknown as KindScripts;
  const entries = keys.map((key) => ({ key, token: 't', ttl: 1_000, fencingToken: 1 }));
  return renewInChunks(scripts, timedCommand(1_000, 'lock:', 'Redis'), cluster, entries);
}

describe('renewals in chunks', () => {
  // Keys in two different hash slots.
  const [a, b] = ['lock:{a}:1', 'lock:{b}:1'];
  const [a2, bGone] = ['lock:{a}:2', 'lock:{b}:gone'];

  it('puts the keys of two slots in two calls', () => {
    expect(slotOf(a)).not.toBe(slotOf(b));
  });

  it('on a Cluster, leaves the locks of a failing node undecided and counts the others', async () => {
    const onA = (key: string) => key.startsWith('lock:{a}');
    await expect(renewing(onA, true, [a, b, a2, bGone])).resolves.toEqual([
      undefined,
      true,
      undefined,
      false,
    ]);
  });

  it('fails as a whole when every call failed', async () => {
    await expect(renewing(() => true, true, [a, b])).rejects.toThrow(/CLUSTERDOWN/);
  });

  it('off a Cluster, fails as a whole when a call failed', async () => {
    await expect(renewing((key) => key === a, false, [a, b])).rejects.toThrow(/CLUSTERDOWN/);
  });
});
