import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import Redlock from 'redlock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf } from './types.js';
/** Both packages keep redlock 5's defaults: a retry every 200 ms ± 100 ms. */
const RETRY_DELAY = 200;
/** The two redlock 5 packages a user would pick. */
const FLAVOURS = {
    redlock: {
        pkg: 'redlock',
        make: (clients, options) => new Redlock(clients, options),
    },
    'sesame-redlock': {
        pkg: '@sesamecare-oss/redlock',
        make: (clients, options) => new SesameRedlock(clients, options),
    },
};
/**
 * `redlock` 5, or its maintained fork `@sesamecare-oss/redlock`, with one Redis client as their
 * READMEs set it up, or with one client per independent master (the RedLock algorithm, which
 * is what these packages are for). Their only way to wait is to retry; the retry count is
 * raised so that they keep trying for about `CONFIG.waitMs`, and the delay and jitter stay at
 * their defaults.
 */
export class RedlockAdapter {
    id;
    name;
    counter;
    clients;
    redlock;
    waiting;
    constructor(id, name, counter, clients, redlock) {
        this.id = id;
        this.name = name;
        this.counter = counter;
        this.clients = clients;
        this.redlock = redlock;
        const { retryCount, retryDelay, retryJitter } = redlock.settings;
        this.waiting = `polls: retryCount ${retryCount}, retryDelay ${retryDelay} ± ${retryJitter} ms`;
    }
    /**
     * With one client on `url`, or one per master in `url` (an array), then under the id `id`.
     */
    static async create(flavour, url, id = flavour) {
        const { pkg, make } = FLAVOURS[flavour];
        const counter = new CommandCounter();
        const urls = typeof url === 'string' ? [url] : url;
        const clients = await Promise.all(urls.map((u) => countedClient(u, counter)));
        const redlock = make(clients, { retryCount: Math.ceil(CONFIG.waitMs / RETRY_DELAY) });
        // Every failed attempt ("resource locked") is emitted as an 'error' event; an EventEmitter
        // without an 'error' listener would throw it.
        redlock.on('error', () => undefined);
        const name = `${pkg} ${await versionOf(pkg)}`;
        return new RedlockAdapter(id, typeof url === 'string' ? name : `${name}, ${urls.length} clients`, counter, clients, redlock);
    }
    acquire(key, ttl) {
        return this.redlock.acquire([`bench:${this.id}:${key}`], ttl);
    }
    async release(lock) {
        await lock.release();
    }
    async close() {
        await Promise.all(this.clients.map((client) => closeClient(client)));
    }
}
//# sourceMappingURL=redlock.js.map