import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ask, parseInfo } from './redis-query.js';
import { freePort, RedisServer, registerPid } from './redis-server.js';
import { TcpProxy } from './tcp-proxy.js';
import { assertAllTier } from './tiers.js';

const HOST = '127.0.0.1';
const MASTER_NAME = 'mymaster';
const SENTINEL_COUNT = 3;
/**
 * How long the master must be silent before a sentinel deems it down. Small, so that a failover
 * takes a few seconds; still far above the sub-millisecond PING replies on loopback.
 */
const DOWN_AFTER_MS = 400;
/**
 * Bounds a failover attempt (a failed election is retried after twice this), and is how long a
 * sentinel waits before it "fixes" a replica that replicates from another address than the
 * master's — which is why the stallable replica needs the ACL guard below.
 */
const FAILOVER_TIMEOUT_MS = 2_000;
/** How long the sentinels may take to find the replica and each other (hellos go every 2 s). */
const READY_TIMEOUT_MS = 20_000;

/** A sentinel's address, in the shape ioredis takes in `{ sentinels, name }`. */
export interface SentinelAddress {
  host: string;
  port: number;
}

export interface SentinelHarnessOptions {
  /**
   * Route the replica's replication link through a {@link TcpProxy} (exposed as `proxy`), so
   * that a test can `stall()` replication and have writes that the replica never gets.
   */
  stallableReplication?: boolean;
}

/**
 * A throwaway Sentinel deployment on free loopback ports, with no persistence: one master, one
 * replica, and three sentinels (quorum 2) tuned to fail over within a few seconds. Every
 * process's pid is registered for the global teardown; {@link stop} kills them all and removes
 * the temporary directory that holds the sentinels' config files and logs.
 */
export class RedisSentinelHarness {
  /** The name the sentinels monitor the master under, for ioredis `{ sentinels, name }`. */
  readonly name = MASTER_NAME;
  private stopped = false;

  private constructor(
    private readonly dir: string,
    private readonly master: RedisServer,
    private readonly replica: RedisServer,
    /** The proxy on the replication link, with `stallableReplication`; else undefined. */
    readonly proxy: TcpProxy | undefined,
    private readonly sentinelProcesses: readonly SentinelProcess[],
  ) {}

  /** The port of the master the deployment started with (it stays that after a failover). */
  get masterPort(): number {
    return this.master.port;
  }

  /** The port of the replica, which becomes the master on failover. */
  get replicaPort(): number {
    return this.replica.port;
  }

  /** The sentinels, ready for ioredis `{ sentinels, name }`. */
  get sentinels(): SentinelAddress[] {
    return this.sentinelProcesses.map(({ port }) => ({ host: HOST, port }));
  }

  /**
   * Starts the master, the replica (through a proxy with `stallableReplication`) and the
   * sentinels, and resolves once replication is up and each sentinel knows the master, the
   * replica and the two other sentinels, so that a failover can start right away.
   */
  static async start(options: SentinelHarnessOptions = {}): Promise<RedisSentinelHarness> {
    assertAllTier('A Redis Sentinel deployment');
    const dir = mkdtempSync(join(tmpdir(), 'lock-sentinel-'));
    // Master and replica get directories of their own: a replica that loads its initial sync
    // from disk writes it as dump.rdb in its working directory, whatever `save` says.
    mkdirSync(join(dir, 'master'));
    mkdirSync(join(dir, 'replica'));
    let master: RedisServer | undefined;
    let replica: RedisServer | undefined;
    let proxy: TcpProxy | undefined;
    const sentinels: SentinelProcess[] = [];
    const cleanUp = async () => {
      await Promise.allSettled([
        ...sentinels.map((sentinel) => sentinel.kill()),
        replica?.kill(),
        master?.kill(),
        proxy?.stop(),
      ]);
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      master = await RedisServer.start([
        '--dir',
        join(dir, 'master'),
        // Diskless full sync without the default 5 s wait for more replicas to join it.
        '--repl-diskless-sync',
        'yes',
        '--repl-diskless-sync-delay',
        '0',
      ]);
      if (options.stallableReplication) proxy = await TcpProxy.start(master.port);
      replica = await RedisServer.start([
        '--dir',
        join(dir, 'replica'),
        '--replicaof',
        HOST,
        String(proxy?.port ?? master.port),
        ...(proxy ? SENTINEL_CANNOT_REPOINT : []),
      ]);
      // Before the sentinels start: a sentinel learns of replicas from the master's INFO, which
      // it reads on connecting and then only every 10 s.
      await waitForReplicationLink(replica.port);
      for (let i = 0; i < SENTINEL_COUNT; i++) {
        sentinels.push(await SentinelProcess.start(dir, master.port));
      }
      await waitUntilSentinelsReady(sentinels, replica.port, proxy?.port ?? master.port);
    } catch (error) {
      const logs = sentinels.map((sentinel) => sentinel.logTail()).join('\n');
      await cleanUp();
      if (logs && error instanceof Error) error.message += `\n${logs}`;
      throw error;
    }
    return new RedisSentinelHarness(dir, master, replica, proxy, sentinels);
  }

  /** SIGKILLs the original master, as in a crash; the sentinels notice after 400 ms. */
  async killMaster(): Promise<void> {
    await this.master.kill();
  }

  /**
   * Resolves with the new master's port (the replica's) once every sentinel names the replica
   * as the master (`SENTINEL GET-MASTER-ADDR-BY-NAME`) and the replica says it is a master
   * (`ROLE`), so that any client asking any sentinel now finds a writable master.
   * @throws Error with what the sentinels last said and their logs' ends after `timeoutMs`
   */
  async waitForFailover(timeoutMs = 15_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        const addresses = await Promise.all(
          this.sentinelProcesses.map(async ({ port }) => {
            const [host, masterPort] = (await ask(
              port,
              'SENTINEL',
              'GET-MASTER-ADDR-BY-NAME',
              MASTER_NAME,
            )) as [string, string];
            return `${host}:${masterPort}`;
          }),
        );
        const [role] = (await ask(this.replicaPort, 'ROLE')) as [string];
        last = `sentinels say ${addresses.join(', ')}; replica's role: ${role}`;
        if (
          addresses.every((address) => address === `${HOST}:${this.replicaPort}`) &&
          role === 'master'
        ) {
          return this.replicaPort;
        }
      } catch (error) {
        last = String(error);
      }
      if (Date.now() > deadline) {
        const logs = this.sentinelProcesses.map((sentinel) => sentinel.logTail()).join('\n');
        throw new Error(`no failover within ${timeoutMs} ms (${last})\n${logs}`);
      }
      await sleep(50);
    }
  }

  /** Kills every process, stops the proxy and removes the temporary directory. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Sentinels first, so that they do not react to the servers going away. SIGKILL throughout:
    // nothing is worth saving, and a SIGTERMed master would wait up to 10 s for a stalled
    // replica to catch up before exiting.
    await Promise.allSettled(this.sentinelProcesses.map((sentinel) => sentinel.kill()));
    await Promise.allSettled([this.replica.kill(), this.master.kill(), this.proxy?.stop()]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * ACL rules for the replica behind the proxy. A sentinel sees that replica replicate from the
 * proxy's port, not from the master's address, and after the failover timeout it "fixes" it
 * (`+fix-slave-config`) with `SLAVEOF <master>`, which would bypass the proxy and make
 * `stall()` a no-op. The rules refuse `SLAVEOF`/`REPLICAOF` with an address (the fix's MULTI is
 * then aborted, harmlessly, on each retry) but allow `SLAVEOF NO ONE`, which is how a sentinel
 * promotes the replica on failover.
 */
const SENTINEL_CANNOT_REPOINT = [
  '--user',
  'default',
  'on',
  'nopass',
  '~*',
  '&*',
  '+@all',
  '-slaveof',
  '-replicaof',
  '+slaveof|no',
  '+replicaof|no',
];

/** A `redis-server --sentinel` process with its own writable config file (Sentinel rewrites it). */
class SentinelProcess {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly logFile: string,
  ) {}

  /** Starts a sentinel on a free port, retrying on another if the port was taken meanwhile. */
  static async start(dir: string, masterPort: number): Promise<SentinelProcess> {
    for (let tries = 0; ; tries++) {
      const port = await freePort();
      const configFile = join(dir, `sentinel-${port}.conf`);
      const logFile = join(dir, `sentinel-${port}.log`);
      writeFileSync(
        configFile,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${JSON.stringify(dir)}`,
          `logfile ${JSON.stringify(logFile)}`,
          // Addresses only: nothing to resolve on loopback, and replies stay plain IPs. The
          // sentinels announce themselves with the address of their link to the master, which
          // is 127.0.0.1, so no announce-ip is needed.
          'sentinel resolve-hostnames no',
          'sentinel announce-hostnames no',
          `sentinel monitor ${MASTER_NAME} ${HOST} ${masterPort} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      // The config file must come first: that is how redis-server tells it from options.
      const child = spawn('redis-server', [configFile, '--sentinel'], { stdio: 'ignore' });
      registerPid(child.pid);
      const sentinel = new SentinelProcess(port, child, logFile);
      try {
        await sentinel.waitForPong();
        return sentinel;
      } catch (error) {
        await sentinel.kill();
        if (tries >= 4) throw error;
      }
    }
  }

  /** SIGKILLs the sentinel and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGKILL');
    await exited;
  }

  /** The end of the sentinel's log (its +sdown, +odown, +switch-master... events), for errors. */
  logTail(lines = 30): string {
    const log = existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
    const tail = log.trimEnd().split('\n').slice(-lines).join('\n');
    return `--- sentinel ${this.port} log ---\n${tail}`;
  }

  private async waitForPong(): Promise<void> {
    for (let tries = 0; tries < 250; tries++) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`sentinel on port ${this.port} exited\n${this.logTail()}`);
      }
      if ((await ask(this.port, 'PING').catch(() => undefined)) === 'PONG') return;
      await sleep(20);
    }
    throw new Error(`sentinel on port ${this.port} did not answer PING\n${this.logTail()}`);
  }
}

/** Resolves once the replica has completed its initial sync and its link is up. */
async function waitForReplicationLink(replicaPort: number): Promise<void> {
  await waitUntil('the replica to sync with the master', async () => {
    const info = parseInfo(String(await ask(replicaPort, 'INFO', 'replication')));
    return info.master_link_status === 'up'
      ? true
      : `master_link_status:${info.master_link_status}`;
  });
}

/**
 * Resolves once every sentinel monitors the master, sees the replica as a healthy replica of
 * it (replicating from `upstreamPort`: the proxy's, when there is one), and knows the other
 * sentinels, which it learns from their hello messages. Until then a failover could pick no
 * replica or lack a majority.
 */
async function waitUntilSentinelsReady(
  sentinels: readonly SentinelProcess[],
  replicaPort: number,
  upstreamPort: number,
): Promise<void> {
  await waitUntil('the sentinels to know the master, the replica and each other', async () => {
    for (const { port } of sentinels) {
      const master = fields((await ask(port, 'SENTINEL', 'MASTER', MASTER_NAME)) as string[]);
      if (master.flags !== 'master') return `sentinel ${port}: master flags ${master.flags}`;
      const replicas = ((await ask(port, 'SENTINEL', 'REPLICAS', MASTER_NAME)) as string[][]).map(
        fields,
      );
      const replica = replicas.find((candidate) => Number(candidate.port) === replicaPort);
      if (
        !replica ||
        replica.flags !== 'slave' ||
        replica['master-link-status'] !== 'ok' ||
        Number(replica['master-port']) !== upstreamPort
      ) {
        return `sentinel ${port}: replicas ${JSON.stringify(replicas)}`;
      }
      const others = (await ask(port, 'SENTINEL', 'SENTINELS', MASTER_NAME)) as unknown[];
      if (others.length !== sentinels.length - 1) {
        return `sentinel ${port}: knows ${others.length} other sentinels`;
      }
    }
    return true;
  });
}

/**
 * Polls `probe` until it returns true; any other value (or error) says what is still missing,
 * and ends up in the error after {@link READY_TIMEOUT_MS}.
 */
async function waitUntil(what: string, probe: () => Promise<true | string>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    let state: true | string;
    try {
      state = await probe();
    } catch (error) {
      state = String(error);
    }
    if (state === true) return;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${READY_TIMEOUT_MS} ms waiting for ${what} (${state})`);
    }
    await sleep(100);
  }
}

/** A flat `[field, value, field, value...]` reply (as SENTINEL MASTER gives) as an object. */
function fields(flat: string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) result[flat[i]] = flat[i + 1];
  return result;
}
