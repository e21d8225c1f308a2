import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisClusterConfig } from '../../../options/lock-options.interface.js';
import { loadClientPackage } from '../client-package.js';
import type { RedisClientLibrary } from '../redis-clients.js';
import { IoRedisClient } from './ioredis.client.js';
import {
  createClusterClient,
  createRedisClient,
  isClusterClient,
  isRedisClient,
  type IoRedisModule,
} from './ioredis.connections.js';

/**
 * ioredis, or iovalkey (its fork, with the same API): a client passed in, of either, goes
 * through the same adapter and needs neither package loaded; the package is loaded to connect
 * from a URL or options.
 */
export function ioRedisLibrary(kind: 'ioredis' | 'iovalkey'): RedisClientLibrary {
  const load = () => loadClientPackage<IoRedisModule>(kind, kind);
  return {
    packageName: kind,
    topologyOf: (value) =>
      isClusterClient(value) ? 'cluster' : isRedisClient(value) ? 'single' : undefined,
    // ioredis and iovalkey take every ioredis option.
    checkOptions: () => undefined,
    checkClusterOptions: () => undefined,
    server: (config) =>
      isRedisClient(config)
        ? { client: new IoRedisClient(config), owned: false }
        : {
            client: new IoRedisClient(createRedisClient(load(), config)),
            owned: true,
          },
    cluster: (config) =>
      isClusterClient(config)
        ? { client: new IoRedisClient(config), owned: false }
        : {
            client: new IoRedisClient(createClusterClient(load(), config as RedisClusterConfig)),
            owned: true,
          },
    optionsOf: (client) => (client as Redis | Cluster).options as RedisOptions,
  };
}
