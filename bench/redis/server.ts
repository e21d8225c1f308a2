import { Redis } from 'ioredis';
import { redisServerOnPath, ThrowawayRedis } from '../../sample/demo/throwaway-redis.js';
import { median, now, sleep } from '../stats.js';
import { CommandCounter, instrument } from './instrument.js';

/** The Redis the benchmark runs against, and who is responsible for stopping it. */
export interface BenchRedis {
  url: string;
  /** `REDIS_URL` (someone else's server: other clients may blur the command counts). */
  external: boolean;
  stop(): Promise<void>;
  /** Last resort on a signal: kill at once. */
  kill(): void;
}

/**
 * `REDIS_URL` if set, else a throwaway `redis-server` on a free loopback port with nothing
 * saved to disk. Never the default 127.0.0.1:6379, which may hold someone's data.
 */
export async function startRedis(): Promise<BenchRedis> {
  const given = process.env.REDIS_URL;
  if (given) return { url: given, external: true, stop: async () => {}, kill: () => {} };
  if (!redisServerOnPath()) {
    throw new Error(
      'redis-server is not on PATH: install it (e.g. `sudo apt-get install redis-server`) ' +
        'or set REDIS_URL to a Redis the benchmark may use',
    );
  }
  const server = await ThrowawayRedis.start();
  return {
    url: server.url,
    external: false,
    stop: () => server.stop(),
    kill: () => server.killNow(),
  };
}

/**
 * The benchmark's own connections: `admin` reads INFO and times PINGs; `work` does the
 * critical sections' counter reads and writes and the PTTL sampling. `work` is counted, so that
 * its commands can be subtracted from the server's counts and only the lock's remain.
 */
export class BenchClients {
  readonly admin: Redis;
  readonly work: Redis;
  readonly workCounter = new CommandCounter();

  constructor(private readonly url: string) {
    this.admin = new Redis(url, { lazyConnect: true });
    this.work = instrument(new Redis(url, { lazyConnect: true }), this.workCounter);
  }

  async connect(): Promise<void> {
    try {
      await Promise.all([connectOrDrop(this.admin), connectOrDrop(this.work)]);
    } catch (error) {
      throw new Error(`Cannot reach Redis at ${redact(this.url)}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.admin, this.work].map((client) => closeClient(client)));
  }

  async redisVersion(): Promise<string> {
    const info = await this.admin.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  }

  /** Calls per command name since the server started (Lua-internal calls included). */
  async commandStats(): Promise<Map<string, number>> {
    const info = await this.admin.info('commandstats');
    const stats = new Map<string, number>();
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      stats.set(match[1].toLowerCase(), Number(match[2]));
    }
    return stats;
  }

  /** Median PING round trip in ms, over `samples` sequential PINGs, each after `idleMs`. */
  async pingRtt(samples: number, idleMs: number): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      if (idleMs > 0) await sleep(idleMs);
      const start = now();
      await this.admin.ping();
      times.push(now() - start);
    }
    return median(times);
  }
}

/** A connected ioredis client whose commands `counter` counts. */
export async function countedClient(url: string, counter: CommandCounter): Promise<Redis> {
  const client = instrument(new Redis(url, { lazyConnect: true }), counter);
  await connectOrDrop(client);
  return client;
}

/**
 * Connects, or, when that fails, stops the client's reconnection attempts before rethrowing:
 * otherwise they would keep the process alive after the benchmark has given up.
 */
async function connectOrDrop(client: Redis): Promise<void> {
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw error;
  }
}

/** QUIT politely; drop the connection if it is not in a state to answer. */
export async function closeClient(client: Redis): Promise<void> {
  await client.quit().catch(() => client.disconnect());
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
