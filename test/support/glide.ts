import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';

const HOST = '127.0.0.1';

/**
 * A GLIDE client of the test's own, as a user would pass it to the module, on a throwaway
 * server. GLIDE's default `requestTimeout` (250 ms) is raised past the module's
 * `commandTimeout`, as the docs advise: a loaded machine answers slower than that.
 */
export function glideClient(port: number): Promise<GlideClient> {
  return GlideClient.createClient({ addresses: [{ host: HOST, port }], requestTimeout: 10_000 });
}

/** A GLIDE Cluster client of the test's own on a throwaway Cluster's nodes. */
export function glideClusterClient(ports: readonly number[]): Promise<GlideClusterClient> {
  return GlideClusterClient.createClient({
    addresses: ports.map((port) => ({ host: HOST, port })),
    requestTimeout: 10_000,
  });
}
