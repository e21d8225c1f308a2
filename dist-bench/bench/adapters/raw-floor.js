import { createHash, randomBytes } from 'node:crypto';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
/** Compare-and-delete: the least a safe release can do. */
const COMPARE_AND_DELETE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;
const COMPARE_AND_DELETE_SHA = createHash('sha1').update(COMPARE_AND_DELETE).digest('hex');
/**
 * The floor: what any Redis lock must at least do, with no library around it. Acquire is one
 * `SET key token NX PX ttl` with a 128-bit random token (as the library's); release is one
 * EVALSHA of a compare-and-delete. It does not wait: a held key fails at once.
 */
export class RawFloorAdapter {
    counter;
    client;
    id = 'raw-floor';
    name = 'raw floor (SET NX PX + Lua compare-and-delete)';
    waiting = 'does not wait';
    constructor(counter, client) {
        this.counter = counter;
        this.client = client;
    }
    static async create(url) {
        const counter = new CommandCounter();
        return new RawFloorAdapter(counter, await countedClient(url, counter));
    }
    async acquire(key, ttl, _waitMs) {
        const handle = await this.trySet(key, ttl);
        if (!handle)
            throw new Error(`raw floor: ${key} is held`);
        return handle;
    }
    async release({ key, token }) {
        let deleted;
        try {
            deleted = await this.client.evalsha(COMPARE_AND_DELETE_SHA, 1, key, token);
        }
        catch (error) {
            // First use on this server: send the script once, then it is cached.
            if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT'))
                throw error;
            deleted = await this.client.eval(COMPARE_AND_DELETE, 1, key, token);
        }
        if (Number(deleted) !== 1)
            throw new Error(`${key} was no longer held at release`);
    }
    async close() {
        await closeClient(this.client);
    }
    async trySet(key, ttl) {
        const redisKey = `bench:${this.id}:${key}`;
        const token = randomBytes(16).toString('hex');
        const set = await this.client.set(redisKey, token, 'PX', ttl, 'NX');
        return set === 'OK' ? { key: redisKey, token } : undefined;
    }
}
//# sourceMappingURL=raw-floor.js.map