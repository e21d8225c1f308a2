import { CommandCounter } from '../redis/instrument.js';
import { countedClient } from '../redis/server.js';
import { now } from '../stats.js';
import { RawFloorAdapter } from './raw-floor.js';
/**
 * The spin floor: the fastest a client can take a contended lock by polling alone. Its head
 * caller retries `SET NX PX` the moment an attempt is refused, with no pause, and the next
 * caller of this process starts spinning as soon as the one before it has the lock: one attempt
 * is always on its way, so a released key is taken by the next attempt to reach Redis, less
 * than a round trip later. One spinner per key and process, not one per caller: fifty callers
 * spinning at once would mostly slow Redis and this process down (each attempt they send
 * delays the holder's release), which is no floor at all. It releases with the floor's
 * compare-and-delete.
 */
export class SpinFloorAdapter extends RawFloorAdapter {
    id = 'spin-floor';
    name = 'spin floor (SET NX PX retried at once, one spinner per key)';
    waiting = 'retries as soon as refused; callers of a process spin one after the other';
    /** Per key, settles once the last caller to arrive has the lock (or gave up). */
    spinning = new Map();
    static async create(url) {
        const counter = new CommandCounter();
        return new SpinFloorAdapter(counter, await countedClient(url, counter));
    }
    async acquire(key, ttl, waitMs) {
        const deadline = now() + waitMs;
        const before = this.spinning.get(key);
        let done;
        const mine = new Promise((resolve) => (done = resolve));
        this.spinning.set(key, mine);
        try {
            await before;
            for (;;) {
                const handle = await this.trySet(key, ttl);
                if (handle)
                    return handle;
                if (now() > deadline)
                    throw new Error(`spin floor: ${key} still held`);
            }
        }
        finally {
            done();
            if (this.spinning.get(key) === mine)
                this.spinning.delete(key);
        }
    }
}
//# sourceMappingURL=spin-floor.js.map