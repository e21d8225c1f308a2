/**
 * The lock's Redis servers as the safety checker sees them: the one redis-server of the
 * single-Redis mode (the caller's, which the checker restarts but never stops), or the N
 * independent masters of the RedLock mode (started here, so that the checker can stop every
 * one of them however the run ends).
 *
 * Besides the servers, it keeps one probe connection per server, through which the checker
 * looks at the lock key itself (who holds it, for how long) without going through the library
 * under test.
 */
import { Redis } from 'ioredis';
import { RedisServer } from '../../support/redis-server.js';
import { shuffled } from './random.mjs';

/**
 * The holder's token (a mutex's value begins with it) and PTTL of the lock key in one atomic
 * step: a copy that expires between two separate commands would otherwise be reported as held
 * with no time left.
 */
const HOLDER_AND_PTTL = `local value = redis.call('GET', KEYS[1]) or ''
return { string.match(value, '^%S*'), redis.call('PTTL', KEYS[1]) }`;

/**
 * The TTL that each waiter queued for a lock asked for, in queue order: the queue is a sorted
 * set of waiter tokens, and a hash gives each token "<lease end> <ttl>".
 */
const QUEUED_TTLS = `local ttls = {}
for i, token in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local entry = redis.call('HGET', KEYS[2], token) or ''
  ttls[i] = tonumber(string.match(entry, ' (%d+)$') or '-1')
end
return ttls`;

/**
 * The `unmark` nemesis's step on a mutex (KEYS: lock, its queue): strips the queue mark from the
 * lock's value, keeping its TTL (1), or reports the lock free while waiters are queued (2), the
 * state a release that found no mark leaves behind; otherwise 0.
 */
const STRIP_QUEUE_MARK = `local value = redis.call('GET', KEYS[1])
if not value then return redis.call('EXISTS', KEYS[2]) == 1 and 2 or 0 end
if string.sub(value, -2) ~= ' +' then return 0 end
redis.call('SET', KEYS[1], string.sub(value, 1, -3), 'KEEPTTL')
return 1`;

/**
 * The `stale-turn` nemesis's step on a mutex (KEYS: lock, its queue): announces to every waiter
 * that queued after the holder got its fencing token (its place's arrival time, in server µs,
 * is above the token, which is at least the server time of its grant) that the lock was granted
 * to it with the holder's token, as a grant notice from before its last refusal would read. A
 * waiter must not hold on it. Returns how many notices went out.
 */
const ANNOUNCE_STALE_TURNS = `local value = redis.call('GET', KEYS[1])
local holder, fence = string.match(value or '', '^(%S+) (%d+)')
if not fence or fence == '0' then return 0 end
local sent = 0
for _, waiter in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. fence, '+inf')) do
  if waiter ~= holder then
    redis.call('PUBLISH', KEYS[1], 'turn:' .. waiter .. ' ' .. fence)
    sent = sent + 1
  end
end
return sent`;

/**
 * @typedef {object} Copy What one server holds under the lock key.
 * @property {boolean} reached whether the server answered the probe
 * @property {string} holder the token stored there ('' when the key is absent)
 * @property {number} pttl Redis's PTTL: ms left, -2 when absent, -1 without expiry
 */

/**
 * @typedef {object} Restart What {@link LockServers.restart} did.
 * @property {number[]} indices the servers restarted
 * @property {number} deadAt when all of them had been killed (Date.now())
 * @property {number} tookMs from the first kill until all answered PING again
 */

export class LockServers {
  /**
   * @param {{ url: string, pid?: number, restart(): Promise<void>, kill?(): Promise<void>, stop?(): Promise<void> }[]} servers
   * @param {boolean} owned whether this class started them, and so must stop them
   */
  constructor(servers, owned) {
    this.servers = servers;
    this.owned = owned;
    /** A majority, as RedLock counts it; 1 for a single server. */
    this.quorum = Math.floor(servers.length / 2) + 1;
    this.probes = servers.map((server) => {
      // A short disconnectTimeout: ioredis otherwise keeps a timer alive after closing a
      // connection to a server that the nemesis killed, and Jest waits for it.
      const probe = new Redis(server.url, {
        maxRetriesPerRequest: 2,
        lazyConnect: true,
        commandTimeout: 1_000,
        disconnectTimeout: 50,
      });
      probe.on('error', () => undefined);
      return probe;
    });
  }

  /**
   * The single-Redis mode: the caller's server.
   * @param {{ url: string, restart(): Promise<void> }} server
   */
  static single(server) {
    return new LockServers([server], false);
  }

  /**
   * The RedLock mode: starts `count` redis-servers. If one fails to start, the others are
   * stopped before the error is thrown, so that nothing is left running.
   * @param {number} count
   */
  static async redlock(count) {
    const started = await Promise.allSettled(
      Array.from({ length: count }, () => RedisServer.start()),
    );
    const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(servers.map((server) => server.stop()));
      throw failed.reason;
    }
    return new LockServers(servers, true);
  }

  get redlock() {
    return this.owned;
  }

  get urls() {
    return this.servers.map((server) => server.url);
  }

  /**
   * What every server holds under `key` right now, probed in parallel. A server that does not
   * answer is reported as not reached rather than failing the probe: the caller decides what
   * an unknown copy means for the check at hand.
   * @param {string} key
   * @returns {Promise<Copy[]>}
   */
  probe(key) {
    return Promise.all(
      this.probes.map(async (probe) => {
        try {
          const [holder, pttl] = /** @type {[string, number]} */ (
            await probe.eval(HOLDER_AND_PTTL, 1, key)
          );
          return { reached: true, holder, pttl: Number(pttl) };
        } catch {
          return { reached: false, holder: '', pttl: -3 };
        }
      }),
    );
  }

  /**
   * One step of `unmark` on the mutex `key` (one server): see {@link STRIP_QUEUE_MARK}.
   * @param {string} key
   * @returns {Promise<0 | 1 | 2>}
   */
  async stripQueueMark(key) {
    return /** @type {0 | 1 | 2} */ (
      Number(await this.probes[0].eval(STRIP_QUEUE_MARK, 2, key, `{${key}}:queue`))
    );
  }

  /**
   * One step of `stale-turn` on the mutex `key` (one server): see {@link ANNOUNCE_STALE_TURNS}.
   * @param {string} key
   * @returns {Promise<number>} how many notices went out
   */
  async announceStaleTurns(key) {
    return Number(await this.probes[0].eval(ANNOUNCE_STALE_TURNS, 2, key, `{${key}}:queue`));
  }

  /**
   * Moves the fencing counter of `prefix` (one server) `byUs` µs ahead of where it is, as if
   * the server's clock had stepped back that far: the next tokens must come from the counter,
   * not the clock. Returns the counter's new value.
   * @param {string} prefix
   * @param {number} byUs
   */
  async counterAhead(prefix, byUs) {
    const moved = await this.probes[0].eval(
      `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0')) + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.0f', next))
return string.format('%.0f', next)`,
      1,
      `{${prefix}}:fence`,
      String(byUs),
    );
    return Number(moved);
  }

  /**
   * The TTLs that the waiters queued for the lock `key` asked for, in queue order (fair mode,
   * one server).
   * @param {string} key
   * @param {boolean} [shared] a semaphore's or read-write lock's queue, kept apart from the mutex's
   * @returns {Promise<number[]>}
   */
  async queuedTtls(key, shared = false) {
    const [queue, waiters] = shared ? ['line', 'places'] : ['queue', 'waiters'];
    const ttls = await this.probes[0].eval(
      QUEUED_TTLS,
      2,
      `{${key}}:${queue}`,
      `{${key}}:${waiters}`,
    );
    return /** @type {unknown[]} */ (ttls).map(Number);
  }

  /**
   * How long, at the most, from when `copies` were probed until a majority of the servers no
   * longer holds `token`: the quorum-th smallest of the remaining lifetimes, counting a server
   * that does not hold `token` (absent, another contender's passing grant, or not reached) as
   * already free. Nobody may acquire before that: an acquirer needs a majority of free copies.
   * One server and quorum 1 make this the key's own PTTL.
   * @param {Copy[]} copies
   * @param {string} [token] the holder's token; unknown, every copy counts as the holder's
   */
  majorityFreeAfter(copies, token) {
    const lifetimes = copies
      .map((copy) => {
        const someoneElses = token !== undefined && copy.holder !== token;
        if (!copy.reached || someoneElses || copy.pttl === -2) return 0;
        return copy.pttl === -1 ? Infinity : copy.pttl;
      })
      .sort((a, b) => a - b);
    return lifetimes[this.quorum - 1];
  }

  /**
   * kill -9 the servers at `indices` together, then start each again empty on its port. The
   * kills come first, all of them, so that `deadAt` marks the moment from which none of them
   * can confirm anything: a holder's validity runs out at most a TTL after it.
   * @param {number[]} indices
   * @returns {Promise<Restart>}
   */
  async restart(indices) {
    const begunAt = Date.now();
    const chosen = indices.map((i) => this.servers[i]);
    await Promise.all(chosen.map((server) => (server.kill ? server.kill() : Promise.resolve())));
    const deadAt = Date.now();
    await Promise.all(chosen.map((server) => server.restart()));
    return { indices, deadAt, tookMs: Date.now() - begunAt };
  }

  /**
   * `count` distinct server indices drawn at random, in increasing order.
   * @param {number} count
   */
  pick(count) {
    return shuffled(this.servers.map((_, i) => i))
      .slice(0, count)
      .sort((a, b) => a - b);
  }

  /** Closes the probes, and stops the servers if they were started here. */
  async close() {
    for (const probe of this.probes) probe.disconnect();
    if (this.owned)
      await Promise.all(
        this.servers.map((server) => (server.stop ? server.stop() : Promise.resolve())),
      );
  }
}
