import type { GlideReturnType } from '@valkey/valkey-glide';
import type {
  RedisClientPort,
  RedisScript,
  RedisSubscriber,
  SubscriberOptions,
} from '../redis-client.port.js';
import type {
  GlideClientLike,
  RedisClusterConfig,
} from '../../../options/lock-options.interface.js';
import type { RedisConnection } from '../redis-client.port.js';
import {
  configurationOf,
  createGlideClient,
  glideClusterConfig,
  glideServerConfig,
  settled,
  type GlideConfiguration,
  type GlideServerOptions,
} from './glide.connections.js';
import { GlideHealth, isConnectionFailure } from './glide.health.js';
import { SlotOrder } from './glide.order.js';
import {
  checkGlideVersion,
  isGlideClient,
  loadGlide,
  type AnyGlideClient,
} from './glide.package.js';
import { glideSubscriber } from './glide.subscriber.js';

/** Replies as strings, whatever `defaultDecoder` the user's client has (GLIDE's `Decoder.String`). */
const AS_STRINGS = { decoder: 1 } as const;

/** What the port needs to know of a GLIDE client, the user's or one the module creates. */
export interface GlideTarget {
  cluster: boolean;
  /** The user's client; the module's is created on the first request, by `create`. */
  client?: AnyGlideClient;
  /** Creates a client of the store's kind (and copy of GLIDE) from a configuration. */
  create: (config: GlideConfiguration) => Promise<AnyGlideClient>;
  /** The store client's configuration, which the subscriber client copies. */
  config: () => GlideConfiguration;
}

/**
 * The Redis client port on a Valkey GLIDE `GlideClient` or `GlideClusterClient` (2.3 or later).
 * Every command goes through `customCommand`, which GLIDE routes by its first key on a Cluster
 * (the keys of one script share a slot), over its one multiplexed connection per node; those of
 * one slot one after the other (see {@link SlotOrder}). GLIDE emits no connection events: see
 * {@link GlideHealth}.
 */
export class GlideRedisClient implements RedisClientPort {
  readonly cluster: boolean;
  /** GLIDE's Cluster client subscribes to sharded channels on the shard of their slot. */
  readonly shardedSubscribe: boolean;
  private client?: AnyGlideClient;
  private creating?: Promise<AnyGlideClient>;
  private closed = false;
  /** Requests sent and not yet answered, which close lets settle first (see {@link close}). */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly health = new GlideHealth(() => this.command(['PING']));
  private readonly order = new SlotOrder();
  /**
   * The scripts sent whole (EVAL) and answered since the last connection failure, on a single
   * server: see {@link runScript}.
   */
  private readonly cached = new Set<string>();
  private readonly failure = (error: unknown): never => {
    this.health.failed(error);
    if (isConnectionFailure(error)) this.cached.clear();
    throw error;
  };

  constructor(private readonly target: GlideTarget) {
    this.cluster = target.cluster;
    this.shardedSubscribe = target.cluster;
    this.client = target.client;
  }

  get reachable(): boolean {
    return this.health.reachable;
  }

  /** Runs `script` after every earlier command on its first key's slot was answered. */
  runScript<Reply>(
    script: RedisScript<Reply>,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<Reply> {
    return this.order.run(keys[0], () => this.script(script, keys, args));
  }

  exists(key: string): Promise<number> {
    return this.order.run(key, () => this.command(['EXISTS', key])).then(Number);
  }

  /**
   * On a single server, a script goes whole (EVAL, which runs and caches it) until it has been
   * answered so, and again after any connection failure, when GLIDE may have reconnected to a
   * server that has forgotten it (a restart): that spares the NOSCRIPT round trip. By SHA
   * otherwise, falling back to EVAL on NOSCRIPT (a server restarted while this client sent
   * nothing, a Cluster, whose nodes cache apart, a SCRIPT FLUSH); the fallback goes before the
   * next command on the slot. GLIDE's own `invokeScript` falls back too, in three requests
   * (EVALSHA, SCRIPT LOAD, EVALSHA) and with native script objects to free; so not that.
   */
  private script<Reply>(
    script: RedisScript<Reply>,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<Reply> {
    const argv = [String(keys.length), ...keys, ...args.map(String)];
    const decode = (reply: GlideReturnType) => script.decode(reply);
    if (!this.cluster && !this.cached.has(script.sha)) {
      return this.command(['EVAL', script.source, ...argv]).then((reply) => {
        this.cached.add(script.sha);
        return decode(reply);
      });
    }
    return this.send(['EVALSHA', script.sha, ...argv]).then(
      (reply) => {
        this.health.answered();
        return decode(reply);
      },
      (error: unknown) => {
        if (!isNoScript(error)) return this.failure(error);
        return this.command(['EVAL', script.source, ...argv]).then(decode);
      },
    );
  }

  waitForReplicas(replicas: number, timeout: number): Promise<number> {
    return this.command(['WAIT', String(replicas), String(timeout)]).then(Number);
  }

  hasCommand(command: string): Promise<boolean> {
    return this.command(['COMMAND', 'INFO', command]).then((info) => {
      // A Cluster may answer per node: { address: reply }.
      const reply: unknown = Array.isArray(info) ? info : Object.values(info ?? {})[0];
      return Array.isArray(reply) && Boolean(reply[0]);
    });
  }

  subscriber(options: SubscriberOptions): RedisSubscriber {
    return glideSubscriber(this.target.create, this.target.config(), options);
  }

  onError(listener: (error: unknown) => void): () => void {
    return this.health.onError(listener);
  }

  onClose(listener: () => void): () => void {
    return this.health.onClose(listener);
  }

  /**
   * Closes the client the module created (requests still due fail with GLIDE's
   * `ClosingError`). GLIDE has no QUIT: its connections close with the client.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.health.close();
    // GLIDE writes the requests it buffered once its current write completes: closed before
    // that, its socket refuses them, and GLIDE prints the error. What was sent settles first
    // (within a bound), then the client closes and fails whatever is still due.
    await settled(this.inFlight);
    // One still being created closes as soon as it is.
    if (this.client) this.client.close();
    else await this.creating?.catch(() => undefined);
  }

  /** Sends one command, noting whether the connection answered. */
  private command(args: string[]): Promise<GlideReturnType> {
    return this.send(args).then((reply) => {
      this.health.answered();
      return reply;
    }, this.failure);
  }

  /** Every request goes through here, and is tracked until it settles (see {@link close}). */
  private send(args: string[]): Promise<GlideReturnType> {
    const client = this.client;
    const sent = client
      ? client.customCommand(args, AS_STRINGS)
      : this.created().then((created) => created.customCommand(args, AS_STRINGS));
    this.inFlight.add(sent);
    const forget = () => void this.inFlight.delete(sent);
    sent.then(forget, forget);
    return sent;
  }

  /** The module's client, created on the first request so that a failed boot opens nothing. */
  private created(): Promise<AnyGlideClient> {
    if (this.creating) return this.creating;
    if (this.closed) return Promise.reject(closedError());
    const creating = this.target.create(this.target.config()).then((client) => {
      if (!this.closed) this.client = client;
      else client.close();
      return this.closed ? Promise.reject(closedError()) : client;
    });
    this.creating = creating;
    // Not kept when it failed, so that the next request tries again.
    creating.catch(() => {
      if (this.creating === creating) this.creating = undefined;
    });
    return creating;
  }
}

/** As GLIDE fails a request to a closed client. */
function closedError(): Error {
  const error = new Error('the lock store closed its GLIDE client');
  error.name = 'ClosingError';
  return error;
}

/** GLIDE's NOSCRIPT: "… NoScriptError: No matching script." */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && /NoScriptError|NOSCRIPT/.test(error.message);
}

/**
 * The store's GLIDE client on one server: the user's `GlideClient`, or one the module creates
 * from a URL or options.
 * @param commandTimeout the store's, from which the module's client gets its `requestTimeout`
 */
export function glideServerConnection(
  config: GlideClientLike | string | GlideServerOptions,
  commandTimeout: number,
): RedisConnection {
  if (isGlideClient(config)) return usersClient(config, false);
  const glide = loadGlide('redisClient', 'glide');
  const configuration = glideServerConfig(config, commandTimeout);
  return ownClient(glide, false, configuration);
}

/**
 * The store's GLIDE client on a Cluster: the user's `GlideClusterClient`, or one the module
 * creates from startup nodes and options.
 */
export function glideClusterConnection(
  config: GlideClientLike | RedisClusterConfig,
  commandTimeout: number,
): RedisConnection {
  if (isGlideClient(config)) return usersClient(config, true);
  const glide = loadGlide('redisClient', 'glide');
  const { cluster, clusterOptions = {} } = config;
  const configuration = glideClusterConfig(
    cluster,
    clusterOptions.redisOptions ?? {},
    commandTimeout,
  );
  return ownClient(glide, true, configuration);
}

function usersClient(given: GlideClientLike, cluster: boolean): RedisConnection {
  const client = checkGlideVersion(given, 'redis');
  const target: GlideTarget = {
    cluster,
    client,
    create: (config) => createGlideClient(client, cluster, config),
    config: () => configurationOf(client),
  };
  return { client: new GlideRedisClient(target), owned: false };
}

function ownClient(
  glide: Parameters<typeof createGlideClient>[0],
  cluster: boolean,
  configuration: GlideConfiguration,
): RedisConnection {
  const target: GlideTarget = {
    cluster,
    create: (config) => createGlideClient(glide, cluster, config),
    config: () => configuration,
  };
  return { client: new GlideRedisClient(target), owned: true };
}
