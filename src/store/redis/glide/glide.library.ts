import { DEFAULT_COMMAND_TIMEOUT } from '../../../lock.constants.js';
import type {
  GlideClientLike,
  RedisClusterConfig,
} from '../../../options/lock-options.interface.js';
import type { RedisConnection } from '../redis-client.port.js';
import { glideClusterConnection, glideServerConnection } from './glide.client.js';
import { configurationOf, type GlideServerOptions } from './glide.connections.js';
import { checkGlideClusterOptions, checkGlideServerOptions } from './glide.options.js';
import { checkGlideVersion, isGlideClient, isGlideClusterClient } from './glide.package.js';

/**
 * GLIDE as one entry of a table of client libraries: how to tell its clients, which options
 * it honours, and the store's connection on one server or a Cluster.
 */
export const glideLibrary = {
  packageName: '@valkey/valkey-glide',
  topologyOf(value: unknown): 'single' | 'cluster' | undefined {
    if (isGlideClusterClient(value)) return 'cluster';
    return isGlideClient(value) ? 'single' : undefined;
  },
  checkOptions: checkGlideServerOptions,
  checkClusterOptions: checkGlideClusterOptions,
  checkClient(name: string, client: object): void {
    if (isGlideClient(client)) checkGlideVersion(client, name);
  },
  /** @param commandTimeout the store's, from which the module's clients get `requestTimeout` */
  server(
    config: string | GlideServerOptions | GlideClientLike,
    commandTimeout = DEFAULT_COMMAND_TIMEOUT,
  ): RedisConnection {
    return glideServerConnection(config, commandTimeout);
  },
  cluster(
    config: RedisClusterConfig | GlideClientLike,
    commandTimeout = DEFAULT_COMMAND_TIMEOUT,
  ): RedisConnection {
    return glideClusterConnection(config, commandTimeout);
  },
  /** Where a client passed in connects (its first address), for the boot line. */
  optionsOf(client: GlideClientLike): { host?: string; port?: number } {
    const [first] = configurationOf(client).addresses;
    return { host: first.host, port: first.port ?? 6379 };
  },
};
