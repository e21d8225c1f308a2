import { Logger } from '@nestjs/common';
import { leaderIdOf } from '../../src/keys/lock-keys.js';
import { LeaderElections } from '../../src/leader/leader-elections.js';
import type { Leadership } from '../../src/leader/leadership.js';
import type { Lock } from '../../src/lock.js';
import type { Checker, Holding } from './checker.js';
import { KEY_PREFIX, type Instance } from './instance.js';
import type { Random } from './random.js';
import type { World } from './world.js';

/** The name of the seed's election, which the checker treats as a mutex. */
export const ELECTION = 'leader';
/** The store key of the election's lock. */
export const ELECTION_KEY = leaderIdOf(KEY_PREFIX, ELECTION).key;

/**
 * Stands `instance` in the seed's election, as `@Leader` would: each term it wins is a hold of
 * the election's lock for the checker, from its start until its signal aborts; a leader may
 * resign after a while.
 */
export function stand(
  instance: Instance,
  world: World,
  random: Random,
  checker: Checker,
): LeaderElections {
  Logger.overrideLogger(false);
  const elections = new LeaderElections(instance.engine, instance.options);
  const ttl = random.int(100, 1_000);
  const lead = (leadership: Leadership) => {
    const lock = (leadership as unknown as { lock: Lock }).lock;
    world.log(`lead   ${instance.name} epoch=${leadership.epoch}`);
    const holding: Holding = {
      caller: instance.name,
      place: instance,
      key: ELECTION,
      lock,
      permits: 1,
    };
    checker.held(holding);
    leadership.signal.addEventListener('abort', () => {
      world.log(`deposed ${instance.name} epoch=${leadership.epoch}`);
      checker.ended(holding);
    });
    if (random.chance(0.4)) {
      setTimeout(() => void elections.resign(ELECTION), random.int(50, 2_000));
    }
  };
  elections.register(ELECTION, { ttl }, lead, 'the simulation');
  world.within(instance, () => elections.start());
  return elections;
}
