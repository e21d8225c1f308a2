import {
  LockConnectionError,
  type LockModuleOptions,
  type PostgresOptions,
  type ZooKeeperOptions,
} from '../../src/index.js';
import { until } from '../support/backends.js';
import { sleep } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import {
  BOUND,
  fenceOf,
  gaveUp,
  refusalOf,
  token,
  waitsOn,
  type StoreContract,
} from './lock-store-harness.js';

/** The stores' bound on a command through the proxy, in ms: far below what a stall lasts. */
const COMMAND_TIMEOUT = 500;
/** How late the proxy delivers what the server answers once it lets traffic through, in ms. */
const ANSWER_DELAY = 300;

/**
 * Attempts whose answer comes after their caller gave up (`inUse`), on the stores whose one
 * server the fixture's options name by a URL or an address: a proxy in front of it stalls the
 * attempt. A Cluster, Sentinels, RedLock's masters, a client passed in and the memory stores
 * cannot be put behind one proxy; their cases return at once (RedLock withdraws every attempt
 * it does not count, whatever `inUse` says).
 */
export function lateReplyCases(ctx: StoreContract): void {
  /**
   * A store of the test's prefix behind a proxy, and who holds a key as the store `a`, not
   * behind it, sees them (through its facet `inspect`); undefined where the options allow no
   * proxy, or the store cannot tell who holds.
   */
  const behindProxy = async () => {
    const server = serverOf(ctx.backend.options(ctx.prefix));
    const inspect = ctx.a.inspect?.bind(ctx.a);
    if (!server || !inspect) return undefined;
    const holders = async (key: string) => (await inspect(key)).holders.map((hold) => hold.token);
    const proxy = await TcpProxy.start(server.port);
    const store = await ctx.open(server.through(proxy.port));
    ctx.defer(async () => {
      proxy.delay(0);
      proxy.resume();
      await ctx.close(store);
      await proxy.stop();
    });
    return { store, proxy, holders };
  };

  it('gives back what an attempt took when its answer came after its caller gave up', async () => {
    const behind = await behindProxy();
    if (!behind) return;
    const { store, proxy, holders } = behind;
    const { a, can, backend } = ctx;
    const key = ctx.key('late');
    const [late, next] = [token(), token()];
    proxy.stall();
    const attempt = store.acquire(key, late, ctx.longTtl, can.queueing, gaveUp);
    await expect(attempt).rejects.toBeInstanceOf(LockConnectionError);
    expect(await holders(key)).toEqual([]);
    proxy.delay(ANSWER_DELAY);
    proxy.resume();
    // The attempt reaches the store after all and takes the key, for a TTL no test outlives...
    await until(async () => (await holders(key)).includes(late), BOUND);
    // ...and the store gives it back once the answer is in.
    await until(async () => (await holders(key)).length === 0, BOUND);
    expect(await backend.waiting(key)).toBe(0);
    proxy.delay(0);
    await ctx.take(a, key, next);
    expect(await a.release(key, next)).toEqual({ released: true });
  });

  it('gives back what an attempt took when the answer came even after its client gave up on it', async () => {
    const behind = await behindProxy();
    if (!behind) return;
    const { store, proxy, holders } = behind;
    const key = ctx.key('later');
    const late = token();
    proxy.stall();
    const attempt = store.acquire(key, late, ctx.longTtl, ctx.can.queueing, gaveUp);
    await expect(attempt).rejects.toBeInstanceOf(LockConnectionError);
    // Past any bound of the client's own (GLIDE's request timeout is twice the command's).
    await sleep(3 * COMMAND_TIMEOUT);
    proxy.resume();
    // Long enough for the attempt to reach the store, if it was sent at all...
    await sleep(2 * ANSWER_DELAY);
    // ...and what it took is given back: the key is free, and nobody waits for it.
    await until(async () => (await holders(key)).length === 0, BOUND);
    expect(await ctx.backend.waiting(key)).toBe(0);
    const next = token();
    await ctx.take(ctx.a, key, next);
    expect(await ctx.a.release(key, next)).toEqual({ released: true });
  });

  it('leaves what a late attempt took to a caller that waits on: its next attempt finds it its own', async () => {
    const behind = await behindProxy();
    if (!behind) return;
    const { store, proxy, holders } = behind;
    const { a, can } = ctx;
    const key = ctx.key('kept');
    const ttl = ctx.longTtl;
    const kept = token();
    proxy.stall();
    const attempt = store.acquire(key, kept, ttl, can.queueing, waitsOn);
    await expect(attempt).rejects.toBeInstanceOf(LockConnectionError);
    proxy.delay(ANSWER_DELAY);
    proxy.resume();
    await until(async () => (await holders(key)).includes(kept), BOUND);
    proxy.delay(0);
    const fencingToken = fenceOf(await store.acquire(key, kept, ttl, can.queueing, waitsOn));
    // Long enough for a give-back on its way to have reached the store: none came.
    await store.ping();
    await sleep(2 * ANSWER_DELAY);
    refusalOf(await a.acquire(key, token(), ttl, false, gaveUp));
    expect(await store.renew([{ key, token: kept, ttl, fencingToken }])).toEqual([true]);
    expect(await store.release(key, kept)).toEqual({ released: true });
  });
}

/**
 * The port of the one server that `options` name by a URL or an address (a Redis URL, a
 * PostgreSQL or ZooKeeper connection string), and the same options naming another port on the
 * loopback interface instead, with a short `commandTimeout`; undefined for anything else.
 */
function serverOf(
  options: LockModuleOptions,
): { port: number; through(port: number): LockModuleOptions } | undefined {
  const commandTimeout = COMMAND_TIMEOUT;
  const { redis } = options;
  if (typeof redis === 'string') {
    const url = new URL(redis);
    return {
      port: Number(url.port),
      through: (port) => ({ ...options, redis: withPort(url, port), commandTimeout }),
    };
  }
  const postgres = options.postgres as PostgresOptions | undefined;
  if (typeof postgres?.connectionString === 'string' && postgres.pool === undefined) {
    const url = new URL(postgres.connectionString);
    return {
      port: Number(url.port),
      through: (port) => ({
        ...options,
        postgres: { ...postgres, connectionString: withPort(url, port) },
        commandTimeout,
      }),
    };
  }
  const zookeeper = options.zookeeper as ZooKeeperOptions | undefined;
  const address = /^127\.0\.0\.1:(\d+)$/.exec(zookeeper?.connectionString ?? '');
  if (zookeeper && address) {
    return {
      port: Number(address[1]),
      through: (port) => ({
        ...options,
        zookeeper: { ...zookeeper, connectionString: `127.0.0.1:${port}` },
        commandTimeout,
      }),
    };
  }
  return undefined;
}

function withPort(url: URL, port: number): string {
  const moved = new URL(url);
  moved.port = String(port);
  return moved.toString();
}
