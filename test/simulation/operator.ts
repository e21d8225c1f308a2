import { LockError } from '../../src/lock.errors.js';
import type { KeyKind } from './checker.js';
import type { Instance } from './instance.js';
import { ELECTION } from './leader.js';
import type { Random } from './random.js';
import type { World } from './world.js';

/**
 * An operator's `forceRelease`, once or twice in some of the faulty runs, at random moments: an
 * instance that is up frees one of the run's keys, whoever holds it. Its holders are evicted
 * (they learn it at their next renewal; the checker counts them no more, see
 * `Checker.storeEvicted`), and the next waiter in line gets its turn. A call that fails with
 * anything but a `LockError` is reported to `failed`.
 */
export function scheduleForceReleases(
  world: World,
  instances: readonly Instance[],
  kinds: ReadonlyMap<string, KeyKind>,
  random: Random,
  failed: (detail: string) => void,
): void {
  const keys = [...kinds.keys()].filter((key) => key !== ELECTION);
  for (let i = random.int(1, 2); i > 0; i--) {
    const at = random.int(0, 4_000);
    const instance = random.pick(instances);
    const key = random.pick(keys);
    world.after(at, () => {
      if (instance.crashed || instance.shutdown) return;
      world.log(`FAULT  ${instance.name} force-releases ${key}`);
      void world.within(instance, async () => {
        try {
          world.log(`forced ${instance.name} ${key} ${await instance.locks.forceRelease(key)}`);
        } catch (error) {
          world.log(`forced ${instance.name} ${key} ${(error as Error).name}`);
          if (!(error instanceof LockError)) failed(`${instance.name}: ${String(error)}`);
        }
      });
    });
  }
}
