import type { LockEvent } from '../lock-store.interface.js';
import { askMasters, type RedlockMaster, type Tally } from './ask-masters.js';

/** How many release messages a subscription remembers, to pass each release on once. */
const RECENT_RELEASES = 16;

/** A subscription on the masters that answered, and what they said. */
export interface MastersSubscription {
  tally: Tally<void>;
  unsubscribe: () => void;
}

/**
 * Subscribes to `key`'s channel on every master, and settles once `quorum` of them subscribed
 * (or too many failed for that). A release reaches a majority of masters, which shares one
 * with any majority of subscriptions: so a majority of subscriptions is enough not to miss it.
 * Each master announces the same release: `onEvent` hears each one once, so that waiters do
 * not make an attempt per master that is bound to be refused.
 */
export async function subscribeOnMasters(
  masters: readonly RedlockMaster[],
  key: string,
  onEvent: (event: LockEvent) => void,
  quorum: number,
): Promise<MastersSubscription> {
  const recent: string[] = [];
  const once = (event: LockEvent) => {
    const id = event.type === 'turn' ? `turn ${event.token}` : `released ${event.id ?? ''}`;
    if (recent.includes(id)) return;
    recent.push(id);
    if (recent.length > RECENT_RELEASES) recent.shift();
    onEvent(event);
  };
  const unsubscribers: (() => void)[] = [];
  let ended = false;
  const unsubscribe = () => {
    ended = true;
    for (const stop of unsubscribers.splice(0)) stop();
  };
  const tolerated = masters.length - quorum;
  const tally = await askMasters(
    masters,
    async (store) => {
      const stop = await store.subscribe(key, once);
      if (ended) stop();
      else unsubscribers.push(stop);
    },
    (answers, failed) => answers.length >= quorum || failed > tolerated,
  );
  return { tally, unsubscribe };
}
