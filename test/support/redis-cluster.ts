import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ask, parseInfo } from './redis-query.js';
import { freePort, RedisServer, type ServerProgram } from './redis-server.js';
import { assertAllTier } from './tiers.js';

const HOST = '127.0.0.1';
const CLUSTER_SLOTS = 16_384;
/** How long a fresh cluster may take to agree on its slots (masters wait 2 s before "ok"). */
const READY_TIMEOUT_MS = 30_000;

/** A cluster node's address, in the shape ioredis `Cluster` takes as a startup node. */
export interface ClusterNodeAddress {
  host: string;
  port: number;
}

/**
 * A throwaway Redis Cluster of masters only, on free loopback ports, with no persistence: each
 * node is a {@link RedisServer} (so its pid is registered for the global teardown) and its
 * cluster state lives in a temporary directory that {@link stop} removes.
 *
 * Redis's own default `cluster-require-full-coverage yes` is kept, as in production: once a
 * killed node is marked failed (after the 1 s node timeout), the whole cluster refuses commands.
 */
export class RedisClusterHarness {
  private stopped = false;

  private constructor(
    private readonly dir: string,
    private readonly servers: readonly RedisServer[],
  ) {}

  /** The ports of the nodes, in start order (killed nodes included). */
  get ports(): number[] {
    return this.servers.map((server) => server.port);
  }

  /** Every node as an ioredis `Cluster` startup node (killed nodes included). */
  get nodes(): ClusterNodeAddress[] {
    return this.ports.map((port) => ({ host: HOST, port }));
  }

  /**
   * Starts `masters` nodes, joins them with `redis-cli --cluster create` (slots spread evenly,
   * no replicas), and resolves once every node says `cluster_state:ok` with all 16384 slots
   * assigned and knows every other node, so that a client's first command finds a settled
   * slot map.
   * @param masters at least 3, which is what `redis-cli --cluster create` accepts
   * @param program the server each node runs (`valkey-server` for a Valkey Cluster)
   * @throws Error with redis-cli's output when the cluster cannot be formed; the nodes started
   *   so far are killed and the temporary directory removed first
   */
  static async start(
    masters = 3,
    program: ServerProgram = 'redis-server',
  ): Promise<RedisClusterHarness> {
    assertAllTier('A Redis Cluster');
    if (!Number.isInteger(masters) || masters < 3) {
      throw new Error(`a Redis Cluster needs at least 3 masters, not ${masters}`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'lock-cluster-'));
    const servers: RedisServer[] = [];
    try {
      // One at a time: freePort() releases the port before redis-server binds it, so parallel
      // starts could be handed the same port.
      for (let i = 0; i < masters; i++) servers.push(await startNode(dir, program));
      await createCluster(servers.map((server) => server.port));
      await waitUntilSettled(servers.map((server) => server.port));
    } catch (error) {
      await Promise.allSettled(servers.map((server) => server.kill()));
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    return new RedisClusterHarness(dir, servers);
  }

  /**
   * The port of the master that serves `key`'s hash slot, as the cluster itself computes the
   * slot (`CLUSTER KEYSLOT`, so hash tags count) and maps it (`CLUSTER SLOTS`). Asks the first
   * node that answers, so it works after a {@link kill}; the dead node is still reported as the
   * owner of its slots, since there is no replica to take them over.
   */
  async portForKey(key: string): Promise<number> {
    let lastError: unknown;
    for (const port of this.ports) {
      try {
        const slot = Number(await ask(port, 'CLUSTER', 'KEYSLOT', key));
        const ranges = (await ask(port, 'CLUSTER', 'SLOTS')) as [
          number,
          number,
          [string, number],
        ][];
        const range = ranges.find(([first, last]) => first <= slot && slot <= last);
        if (!range) throw new Error(`slot ${slot} of ${key} is not assigned`);
        return Number(range[2][1]);
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`no cluster node could say which serves ${key}: ${String(lastError)}`);
  }

  /** SIGKILLs the node on `port`, as in a crash. The others mark it failed after 1 s. */
  async kill(port: number): Promise<void> {
    const server = this.servers.find((candidate) => candidate.port === port);
    if (!server)
      throw new Error(`no cluster node on port ${port} (nodes: ${this.ports.join(',')})`);
    await server.kill();
  }

  /** Kills every node and removes the temporary directory. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // SIGKILL rather than SIGTERM: nothing is worth saving, and it never waits on anything.
    await Promise.allSettled(this.servers.map((server) => server.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * One cluster-enabled node. The cluster bus gets a free port of its own (`cluster-port`)
 * instead of the default data port + 10000, which may be taken or even above 65535 for the
 * high ports the kernel hands out; when it turns out to be taken, the node fails to start and
 * is retried with another one.
 */
async function startNode(dir: string, program: ServerProgram): Promise<RedisServer> {
  for (let tries = 0; ; tries++) {
    const busPort = await freePort();
    try {
      return await RedisServer.start(
        (port) => [
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '1000',
          '--cluster-port',
          String(busPort),
        ],
        program,
      );
    } catch (error) {
      if (tries >= 2) throw error;
    }
  }
}

/** `redis-cli --cluster create`: assigns the slots evenly and introduces the nodes. */
async function createCluster(ports: number[]): Promise<void> {
  const args = [
    '--cluster',
    'create',
    ...ports.map((port) => `${HOST}:${port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ];
  const { failed, output } = await new Promise<{ failed: boolean; output: string }>((resolve) => {
    // The timeout kills redis-cli should it hang, so that no stray process outlives a test; a
    // dumb terminal keeps colour codes out of the output that an error shows.
    const options = { timeout: 60_000, env: { ...process.env, TERM: 'dumb' } };
    execFile('redis-cli', args, options, (error, stdout, stderr) =>
      resolve({ failed: error !== null, output: `${stdout}${stderr}`.trim() }),
    );
  });
  // redis-cli has exited 0 after printing an error in some versions, so its verdict is read too.
  if (failed || !output.includes(`[OK] All ${CLUSTER_SLOTS} slots covered`)) {
    throw new Error(`redis-cli ${args.join(' ')} failed:\n${output}`);
  }
}

/**
 * Resolves once every node has the whole slot map and has turned its state to ok, which takes
 * a moment after redis-cli returns: gossip spreads the other nodes' slots, and a master waits
 * about 2 s after starting before it declares the cluster ok.
 */
async function waitUntilSettled(ports: number[]): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  for (;;) {
    const states = await Promise.all(
      ports.map(async (port) => {
        try {
          return { port, info: parseInfo(String(await ask(port, 'CLUSTER', 'INFO'))) };
        } catch (error) {
          return { port, info: { error: String(error) } };
        }
      }),
    );
    const settled = states.every(
      ({ info }) =>
        info.cluster_state === 'ok' &&
        Number(info.cluster_slots_assigned) === CLUSTER_SLOTS &&
        Number(info.cluster_known_nodes) === ports.length,
    );
    if (settled) return;
    last = states
      .map(
        ({ port, info }) =>
          `${port}: ${info.error ?? `${info.cluster_state}, ${info.cluster_slots_assigned} slots, ${info.cluster_known_nodes} nodes`}`,
      )
      .join('; ');
    if (Date.now() > deadline) {
      throw new Error(`the cluster did not settle within ${READY_TIMEOUT_MS} ms (${last})`);
    }
    await sleep(100);
  }
}
