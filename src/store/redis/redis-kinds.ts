import type { RedisClientPort } from './redis-client.port.js';
import { scriptKeysOf, sharedScriptKeysOf, sideKeyOf, type SideKeyRole } from './redis-keys.js';
import { kindOfToken } from '../lock-kind.js';
import {
  type ReleaseOutcome,
  type RenewalEntry,
  type StoredLock,
} from '../lock-store.interface.js';
import { ACQUIRE_SCRIPT, type AcquireArgs } from './scripts/acquire.script.js';
import { FORCE_RELEASE_SCRIPT, type ForceReleaseArgs } from './scripts/force-release.script.js';
import { INSPECT_SCRIPT } from './scripts/inspect.script.js';
import { SHARED_FORCE_RELEASE_SCRIPT } from './scripts/shared/shared-force-release.script.js';
import { RELEASE_SCRIPT, type ReleaseArgs } from './scripts/release.script.js';
import { RENEW_SCRIPT } from './scripts/renew.script.js';
import {
  SHARED_ACQUIRE_SCRIPT,
  type SharedAttempt,
} from './scripts/shared/shared-acquire.script.js';
import { SHARED_RELEASE_SCRIPT } from './scripts/shared/shared-release.script.js';
import { SHARED_RENEW_SCRIPT } from './scripts/shared/shared-renew.script.js';

/**
 * The scripts of each lock kind on one client: a mutex's token runs the mutex scripts, a
 * semaphore permit's or read-write share's token (see `LockKind.shared`) the shared ones, whose keys
 * hold the holders beside the lock.
 */
export class KindScripts {
  /**
   * @param keyPrefix the module's `keyPrefix`, under which the fencing counters lie
   * @param cluster whether `client` is a Cluster client: then the counters are per hash slot
   */
  constructor(
    private readonly client: RedisClientPort,
    private readonly keyPrefix: string,
    private readonly cluster: boolean,
  ) {}

  /** One attempt on `key` for the token in `args`, with the script of its kind. */
  acquire(key: string, args: AcquireArgs): Promise<SharedAttempt> {
    return kindOfToken(args[0]).shared
      ? SHARED_ACQUIRE_SCRIPT.run(
          this.client,
          sharedScriptKeysOf(key, this.keyPrefix, this.cluster),
          args,
        )
      : ACQUIRE_SCRIPT.run(this.client, scriptKeysOf(key, this.keyPrefix, this.cluster), args);
  }

  /** Releases the token in `args` from `key`, with the script of its kind. */
  release(key: string, args: ReleaseArgs): Promise<ReleaseOutcome> {
    return kindOfToken(args[0]).shared
      ? SHARED_RELEASE_SCRIPT.run(
          this.client,
          sharedScriptKeysOf(key, this.keyPrefix, this.cluster),
          args,
        )
      : RELEASE_SCRIPT.run(this.client, scriptKeysOf(key, this.keyPrefix, this.cluster), args);
  }

  /** Who holds `key`, as whichever kind, and how many wait in either of its lines. */
  inspect(key: string): Promise<StoredLock> {
    const side = (role: SideKeyRole) => sideKeyOf(key, role);
    return INSPECT_SCRIPT.run(
      this.client,
      [
        key,
        side('queue'),
        side('waiters'),
        side('holders'),
        side('tenures'),
        side('line'),
        side('places'),
      ],
      [],
    );
  }

  /**
   * Evicts whoever holds `key`, with the script of the kind it is held as: how many holders it
   * evicted. A key that changes kind between the two scripts' looks is looked at again.
   */
  async forceRelease(key: string, args: ForceReleaseArgs): Promise<number> {
    const mutexKeys = scriptKeysOf(key, this.keyPrefix, this.cluster);
    const sharedKeys = sharedScriptKeysOf(key, this.keyPrefix, this.cluster);
    for (let shared = false; ; shared = !shared) {
      const outcome = shared
        ? await SHARED_FORCE_RELEASE_SCRIPT.run(this.client, sharedKeys, args)
        : await FORCE_RELEASE_SCRIPT.run(this.client, mutexKeys, args);
      if ('evicted' in outcome) return outcome.evicted;
    }
  }

  /** Renews the entries of one chunk; the replies come in the chunk's order. */
  async renew(chunk: readonly RenewalEntry[]): Promise<boolean[]> {
    const shared = chunk.filter((entry) => kindOfToken(entry.token).shared);
    if (shared.length === 0) return this.renewMutexes(chunk);
    // Semaphore permits and read-write shares renew with a script of their own, in the same
    // round trip (the client pipelines the two calls).
    const mutexes = chunk.filter((entry) => !kindOfToken(entry.token).shared);
    const [mutexReplies, sharedReplies] = await Promise.all([
      mutexes.length === 0 ? [] : this.renewMutexes(mutexes),
      SHARED_RENEW_SCRIPT.run(
        this.client,
        shared.flatMap((entry) => [
          entry.key,
          sideKeyOf(entry.key, 'holders'),
          sideKeyOf(entry.key, 'tenures'),
        ]),
        shared.flatMap((entry) => [entry.token, entry.ttl]),
      ),
    ]);
    const replies = new Map<RenewalEntry, boolean>();
    mutexes.forEach((entry, i) => replies.set(entry, mutexReplies[i]));
    shared.forEach((entry, i) => replies.set(entry, sharedReplies[i]));
    return chunk.map((entry) => replies.get(entry) === true);
  }

  private renewMutexes(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    return RENEW_SCRIPT.run(
      this.client,
      entries.map((entry) => entry.key),
      entries.flatMap((entry) => [entry.token, entry.ttl]),
    );
  }
}
