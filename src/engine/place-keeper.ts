import { QUEUE_LEASE } from '../store/lock-store.interface.js';

/**
 * Renews the places in the store's queue of the callers that wait behind a key's head, every
 * third of the queue lease, as the head's attempts renew its own: a long wait must not cost them
 * their turn against callers of other processes that came later.
 */
export class PlaceKeeper {
  private timer?: NodeJS.Timeout;

  /** @param renew renews the store's queue leases of the given callers' tokens */
  constructor(private readonly renew?: (tokens: string[]) => void) {}

  /** Renews, from now on, the places of the callers `behind()` names each time. */
  start(behind: () => string[]): void {
    const { renew } = this;
    if (!renew || this.timer) return;
    this.timer = setInterval(() => renew(behind()), QUEUE_LEASE / 3);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
