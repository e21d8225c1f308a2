import type { Instance } from './instance.js';
import type { Network } from './network.js';
import type { Random } from './random.js';

/** How long the faults of a seed last in all, for the deadlines' slack. */
export interface FaultPlan {
  total: number;
}

/**
 * Schedules the seed's faults at random moments of the workload: instances stopped (SIGSTOP)
 * or killed, their connections stalled, their notices lagging behind their replies, the store
 * paused, an instance shut down early; none in a quiet run. At
 * least one instance is never killed nor shut down early. An early shutdown that rejects is
 * reported to `failed`.
 */
export function scheduleFaults(
  instances: readonly Instance[],
  network: Network,
  random: Random,
  quiet: boolean,
  failed: (detail: string) => void,
): FaultPlan {
  const { world } = network;
  let total = 0;
  const faults = quiet ? 0 : random.int(0, 6);
  const spared = random.pick(instances);
  for (let i = 0; i < faults; i++) {
    const at = random.int(0, 4_000);
    const ms = random.int(50, 1_500);
    const instance = random.pick(instances);
    const fault = random.pick(['pause', 'stall', 'notices', 'store', 'crash', 'shutdown'] as const);
    total += ms;
    world.after(at, () => {
      if (instance.crashed) return;
      switch (fault) {
        case 'pause':
          world.log(`FAULT  ${instance.name} stopped for ${ms} ms`);
          world.pause(instance, ms);
          return;
        case 'stall':
          world.log(`FAULT  ${instance.name}'s connection stalls for ${ms} ms`);
          instance.stalledUntil = Math.max(instance.stalledUntil, world.now() + ms);
          return;
        case 'notices':
          world.log(`FAULT  ${instance.name}'s notices lag for ${ms} ms`);
          instance.noticesStalledUntil = Math.max(instance.noticesStalledUntil, world.now() + ms);
          return;
        case 'store':
          world.log(`FAULT  the store pauses for ${ms} ms`);
          network.storePausedUntil = Math.max(network.storePausedUntil, world.now() + ms);
          return;
        case 'crash':
          if (instance === spared) return;
          world.log(`FAULT  ${instance.name} killed`);
          instance.crash();
          return;
        case 'shutdown':
          if (instance === spared || instance.shutdown) return;
          world.log(`FAULT  ${instance.name} shuts down`);
          world
            .within(instance, () => instance.close())
            .catch((error: unknown) => failed(`${instance.name}: ${String(error)}`));
      }
    });
  }
  return { total };
}

/**
 * Faults aimed at a moment rather than drawn at random: the request of an extend, or of a call
 * that does not wait, has left, and the instance's connection stalls, so that the store applies
 * it and the answer comes late (a shorter TTL must count from the request; a grant answered
 * after its TTL must not be used). Not in a quiet run. Each adds its length to the checker's
 * slack, as the drawn faults do.
 */
export class Nemesis {
  constructor(
    private readonly network: Network,
    private readonly random: Random | undefined,
    private readonly slack: (ms: number) => void,
  ) {}

  sent(instance: Instance, what: string): void {
    const { random } = this;
    if (!random?.chance(0.3) || instance.crashed) return;
    const { world } = this.network;
    const ms = random.int(20, 800);
    // Once the request is on its way: the stall holds the answer, and what follows it.
    world.after(1, () => {
      if (instance.crashed) return;
      world.log(`FAULT  ${instance.name}'s connection stalls for ${ms} ms, after ${what}`);
      instance.stalledUntil = Math.max(instance.stalledUntil, world.now() + ms);
      this.slack(ms);
    });
  }
}
