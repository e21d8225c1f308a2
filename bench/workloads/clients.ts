import { CLIENT_LIBRARIES, libraryIdOn, ThisLibraryAdapter } from '../adapters/this-library.js';
import type { BenchClients } from '../redis/server.js';
import { runInstances, type InstancesResult } from './instances.js';
import { runUncontended, throughputRound, type ThroughputResult } from './throughput.js';
import { CONFIG } from '../config.js';

/** Workload 12: this library on each Redis client library it runs on, one Redis. */
export interface ClientsResult {
  /** Per client library (by the library's id on it): one caller, acquire + release. */
  uncontended: Record<string, ThroughputResult>;
  /** Per client library: the instances of workload 10 on one key. */
  instances: Record<string, InstancesResult>;
}

/**
 * This library on each client library (ioredis, iovalkey, node-redis, GLIDE; another is one
 * more entry in `CLIENT_LIBRARIES`): uncontended in this process, interleaved as in workload 1,
 * then contended by the instance processes of workload 10.
 */
export async function runClients(
  clients: BenchClients,
  url: string,
  progress: (message: string) => void,
): Promise<ClientsResult> {
  const adapters = await Promise.all(
    CLIENT_LIBRARIES.map((client) =>
      ThisLibraryAdapter.create(url, libraryIdOn(client), undefined, client),
    ),
  );
  try {
    for (const adapter of adapters) await throughputRound(adapter, 1, CONFIG.warmup.ms, 'cw:1');
    progress('12. Client libraries: uncontended');
    const uncontended = await runUncontended(adapters, 'clients');
    progress(`12. Client libraries: ${CONFIG.instances.instances} instances on one key`);
    const instances = await runInstances(
      adapters.map((adapter) => adapter.id),
      clients,
      url,
    );
    return {
      uncontended: Object.fromEntries([...uncontended].map(([a, result]) => [a.id, result])),
      instances,
    };
  } finally {
    await Promise.all(adapters.map((adapter) => adapter.close()));
  }
}
