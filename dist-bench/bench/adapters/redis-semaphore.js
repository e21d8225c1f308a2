import { defaultTimeoutOptions, Mutex } from 'redis-semaphore';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf } from './types.js';
/**
 * `redis-semaphore`'s `Mutex`, one instance per acquisition as its README shows, with its
 * defaults: it retries every `retryInterval` (10 ms) until `acquireTimeout`, and refreshes a
 * held lock on a timer of its own (at 80 % of `lockTimeout`, which no workload reaches).
 */
export class RedisSemaphoreAdapter {
    name;
    counter;
    client;
    id = 'redis-semaphore';
    waiting = `polls every ${defaultTimeoutOptions.retryInterval} ms (default retryInterval)`;
    constructor(name, counter, client) {
        this.name = name;
        this.counter = counter;
        this.client = client;
    }
    static async create(url) {
        const counter = new CommandCounter();
        const client = await countedClient(url, counter);
        const version = await versionOf('redis-semaphore');
        return new RedisSemaphoreAdapter(`redis-semaphore ${version} Mutex`, counter, client);
    }
    async acquire(key, ttl, waitMs) {
        const mutex = new Mutex(this.client, `bench:sem:${key}`, {
            lockTimeout: ttl,
            acquireTimeout: waitMs,
        });
        await mutex.acquire();
        return mutex;
    }
    release(mutex) {
        return mutex.release();
    }
    async close() {
        await closeClient(this.client);
    }
}
//# sourceMappingURL=redis-semaphore.js.map