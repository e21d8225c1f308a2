import type {
  GlideClient,
  GlideClientConfiguration,
  GlideClusterClient,
  GlideClusterClientConfiguration,
} from '@valkey/valkey-glide';
import type {
  GlideClientLike,
  RedisClusterConfig,
} from '../../../options/lock-options.interface.js';
import type { AnyGlideClient, GlideModule } from './glide.package.js';

/** The options of one server that the module translates for GLIDE (ioredis's names). */
export interface GlideServerOptions {
  host?: string;
  port?: number;
  username?: string;
  password?: string;
  db?: number;
  tls?: object | boolean;
  connectTimeout?: number;
}

/** The option names of {@link GlideServerOptions}, for the checks of the module options. */
export const GLIDE_SERVER_OPTIONS: ReadonlySet<string> = new Set([
  'host',
  'port',
  'username',
  'password',
  'db',
  'tls',
  'connectTimeout',
]);

type ClusterNode = RedisClusterConfig['cluster'][number];
type NodeAddress = GlideClientConfiguration['addresses'][number];

/** What GLIDE's two kinds of client are created from, as the module sets them up. */
export type GlideConfiguration = GlideClientConfiguration | GlideClusterClientConfiguration;

/**
 * How long the module's GLIDE clients wait for an answer (GLIDE's `requestTimeout`), as a
 * multiple of the store's `commandTimeout`: GLIDE's default, 250 ms, would fail requests that
 * the store still waits for, and a request the store gave up on must still be answered, late,
 * so that what it took can be given back.
 */
const REQUEST_TIMEOUT_FACTOR = 2;

/** The GLIDE configuration of one server from a `redis://` / `rediss://` URL or options. */
export function glideServerConfig(
  config: string | GlideServerOptions,
  commandTimeout: number,
): GlideClientConfiguration {
  const options = typeof config === 'string' ? optionsOfUrl(config) : config;
  return {
    ...connectionOf(options, commandTimeout),
    addresses: [{ host: options.host ?? '127.0.0.1', port: options.port ?? 6379 }],
    ...(options.db ? { databaseId: options.db } : {}),
  };
}

/** The GLIDE configuration of a Cluster from its startup nodes and ioredis-named options. */
export function glideClusterConfig(
  nodes: readonly ClusterNode[],
  nodeOptions: GlideServerOptions,
  commandTimeout: number,
): GlideClusterClientConfiguration {
  return {
    ...connectionOf(nodeOptions, commandTimeout),
    addresses: nodes.map(addressOfNode),
  };
}

/**
 * Creates a client like `config` says, with the class of `like` (a client of the user's, so
 * of the user's copy of GLIDE) or of the loaded package. It connects on its first request.
 */
export function createGlideClient(
  source: GlideModule | AnyGlideClient,
  cluster: boolean,
  config: GlideConfiguration,
): Promise<AnyGlideClient> {
  const lazy = { ...config, lazyConnect: true };
  if ('GlideClient' in source) {
    return cluster
      ? source.GlideClusterClient.createClient(lazy)
      : source.GlideClient.createClient(lazy);
  }
  const type = source.constructor as typeof GlideClient | typeof GlideClusterClient;
  return (type.createClient as (config: GlideConfiguration) => Promise<AnyGlideClient>)(lazy);
}

/**
 * The configuration a GLIDE client was created with. GLIDE keeps it (for its own reconnects)
 * but does not type it as public; the subscriber client the module makes beside a user's
 * client connects with it, to the same servers with the same credentials.
 */
export function configurationOf(client: AnyGlideClient | GlideClientLike): GlideConfiguration {
  const config = (client as unknown as { config?: GlideConfiguration }).config;
  if (!config?.addresses) {
    throw new Error(
      'this GLIDE client does not show the configuration it was created with, which its ' +
        'subscriber connection needs; pass the module a URL or options with ' +
        "redisClient: 'glide' instead",
    );
  }
  return config;
}

function connectionOf(
  { username, password, tls, connectTimeout }: GlideServerOptions,
  commandTimeout: number,
): Omit<GlideClientConfiguration, 'addresses'> {
  return {
    requestTimeout: commandTimeout * REQUEST_TIMEOUT_FACTOR,
    ...(password !== undefined ? { credentials: { username, password } } : {}),
    ...(tls ? { useTLS: true } : {}),
    ...(connectTimeout !== undefined
      ? { advancedConfiguration: { connectionTimeout: connectTimeout } }
      : {}),
  };
}

function optionsOfUrl(url: string): GlideServerOptions {
  const parsed = new URL(url);
  const db = parsed.pathname.slice(1);
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: db ? Number(db) : undefined,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
  };
}

/** A Cluster startup node as ioredis takes it (a port, `host:port`, a URL, or options). */
function addressOfNode(node: ClusterNode): NodeAddress {
  if (typeof node === 'number') return { host: '127.0.0.1', port: node };
  if (typeof node === 'string') {
    if (node.includes('://')) {
      const { host, port } = optionsOfUrl(node);
      return { host: host ?? '127.0.0.1', port };
    }
    const [host, port] = node.includes(':') ? node.split(':') : ['127.0.0.1', node];
    return { host, port: Number(port) };
  }
  return { host: node.host ?? '127.0.0.1', port: node.port ?? 6379 };
}

/** `host:port` of the first server a GLIDE client was configured with, for messages. */
export function glideAddressOf(client: GlideClientLike): string {
  const [first] = (client as { config?: Partial<GlideConfiguration> }).config?.addresses ?? [];
  return first ? `${first.host}:${first.port ?? 6379}` : 'a GLIDE client';
}

/** How long closing waits, at most, for the requests already sent to be answered. */
const CLOSE_SETTLE_MS = 1_000;

/**
 * Resolves once every request of `inFlight` has settled, or after {@link CLOSE_SETTLE_MS}.
 * GLIDE writes the requests it buffered once its current write completes: a client closed
 * before that refuses them on its ended socket, and GLIDE prints the error.
 */
export async function settled(inFlight: ReadonlySet<Promise<unknown>>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(inFlight),
    new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_SETTLE_MS))),
  ]);
  clearTimeout(timer);
}
