import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endProcess, freePort, registerPid } from './redis-server.js';
import { TcpProxy } from './tcp-proxy.js';
import { assertAllTier } from './tiers.js';

/** Where Debian's `zookeeper` package puts the server and its default configuration. */
export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
const CLASSPATH = `/etc/zookeeper/conf:${ZOOKEEPER_JAR}`;

/**
 * A short tick, so that sessions can be as short as 2 ticks (a killed holder's session expires
 * within a second or so) and elections end quickly; sessions may last up to 30 s.
 */
export const TICK_TIME = 200;

/**
 * How many ticks a follower waits for its leader (and the leader for it) before it gives up on
 * the link, unless an ensemble asks otherwise.
 */
const SYNC_LIMIT = 10;

/**
 * A `syncLimit` for the tests that cut a follower off (see {@link ZooKeeperEnsemble.isolate}):
 * 25 ticks, 5 s, longer than the sessions of 2 s at most that they use. So the leader expires
 * a session of the cut-off follower's, deletes its nodes and lets another session take its
 * locks while the follower still answers reads from its own stale copy of the tree: the window
 * in which a renewal that reads would be fooled.
 */
export const PARTITION_SYNC_LIMIT = 25;

/** Says how to get the ZooKeeper server when it is missing, instead of failing obscurely. */
export function assertZooKeeperInstalled() {
  if (!existsSync(ZOOKEEPER_JAR)) {
    throw new Error(
      `${ZOOKEEPER_JAR} is missing; the ZooKeeper tests start their own ZooKeeper servers.\n` +
        'Install it, e.g. `sudo apt-get install -y zookeeper` (Debian/Ubuntu; it brings a ' +
        'Java runtime along), then run `npm test` again.',
    );
  }
}

/**
 * Sends a four-letter command (`srvr`, `ruok`) and returns the answer, or '' when the server
 * does not answer.
 * @param {number} port
 * @param {string} command
 * @returns {Promise<string>}
 */
export function fourLetters(port, command) {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(1000);
    socket.once('connect', () => socket.write(command));
    socket.on('data', (data) => (answer += String(data)));
    socket.once('end', () => resolve(answer));
    socket.once('error', () => resolve(''));
    socket.once('timeout', () => {
      socket.destroy();
      resolve('');
    });
  });
}

/**
 * One throwaway ZooKeeper server on free loopback ports, with its own zoo.cfg and data in a
 * temporary directory: a standalone server, or a member of an ensemble (see
 * {@link ZooKeeperEnsemble}). Tests kill it, pause it, restart it on the same ports (keeping
 * its data, like a crashed server that comes back), and stop it.
 */
export class ZooKeeperServer {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  #process;

  /**
   * @param {{ port: number, dir: string, id?: number, peers?: string[], syncLimit?: number }}
   *   config `peers`: the `server.N=` lines of an ensemble; `id`: this member's number in them
   */
  constructor({ port, dir, id, peers, syncLimit = SYNC_LIMIT }) {
    /** @readonly */
    this.port = port;
    /** @readonly */
    this.dir = dir;
    /** @readonly */
    this.id = id;
    this.ensemble = peers !== undefined;
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    if (id !== undefined) writeFileSync(join(dataDir, 'myid'), `${id}\n`);
    writeFileSync(
      join(dir, 'zoo.cfg'),
      [
        `tickTime=${TICK_TIME}`,
        `dataDir=${dataDir}`,
        `clientPort=${port}`,
        'clientPortAddress=127.0.0.1',
        'admin.enableServer=false',
        '4lw.commands.whitelist=srvr,ruok,wchp',
        'initLimit=25',
        `syncLimit=${syncLimit}`,
        'maxSessionTimeout=30000',
        ...(peers ?? []),
        '',
      ].join('\n'),
    );
  }

  /** `127.0.0.1:port`, for a connection string. */
  get address() {
    return `127.0.0.1:${this.port}`;
  }

  get pid() {
    return this.#process?.pid;
  }

  /**
   * Starts a standalone server on a free port.
   * @returns {Promise<ZooKeeperServer>}
   */
  static async start() {
    assertAllTier('ZooKeeper');
    assertZooKeeperInstalled();
    const server = new ZooKeeperServer({
      port: await freePort(),
      dir: mkdtempSync(join(tmpdir(), 'lock-zk-')),
    });
    await server.launch();
    await server.serving();
    return server;
  }

  /** Starts the server process (an ensemble member serves once a quorum has formed). */
  async launch() {
    const main = this.ensemble
      ? 'org.apache.zookeeper.server.quorum.QuorumPeerMain'
      : 'org.apache.zookeeper.server.ZooKeeperServerMain';
    const child = spawn(
      'java',
      ['-Xmx128m', '-XX:+UseSerialGC', '-cp', CLASSPATH, main, join(this.dir, 'zoo.cfg')],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.#process = child;
    registerPid(child.pid);
    let output = '';
    child.stderr?.on('data', (chunk) => (output = (output + String(chunk)).slice(-2000)));
    this.exited = once(child, 'exit').then(([code]) => `exited with code ${code}: ${output}`);
  }

  /** Resolves once the server serves clients (for an ensemble member: once it has a leader). */
  async serving() {
    for (let tries = 0; tries < 600; tries++) {
      if (/Mode: (standalone|leader|follower)/.test(await this.srvr())) return;
      if (!this.#process || this.#process.exitCode !== null) {
        throw new Error(`ZooKeeper on port ${this.port} ${await this.exited}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`ZooKeeper on port ${this.port} did not start serving`);
  }

  /** The server's `srvr` report ('' when it does not answer). */
  srvr() {
    return fourLetters(this.port, 'srvr');
  }

  /** Whether this ensemble member leads. */
  async isLeader() {
    return (await this.srvr()).includes('Mode: leader');
  }

  /** SIGKILL: the server vanishes without a word, as in a crash. */
  async kill() {
    await this.#end('SIGKILL');
  }

  /** SIGSTOP: the server stays connected but answers nothing, as in a long pause. */
  pause() {
    this.#process?.kill('SIGSTOP');
  }

  resume() {
    this.#process?.kill('SIGCONT');
  }

  /** Starts the server again on the same ports, with the data it had. */
  async restart() {
    await this.kill();
    await this.launch();
    await this.serving();
  }

  /** Stops the server and deletes its directory. */
  async stop() {
    this.resume();
    await this.#end('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** @param {NodeJS.Signals} signal */
  async #end(signal) {
    const child = this.#process;
    this.#process = undefined;
    await endProcess(child, signal);
  }
}

/**
 * A ZooKeeper ensemble of `size` servers on free loopback ports. A partitionable ensemble sends
 * every link between two members through a {@link TcpProxy} of its own, so that a member can be
 * cut off from the others while it still answers its clients (see {@link isolate}).
 */
export class ZooKeeperEnsemble {
  /**
   * @param {ZooKeeperServer[]} servers
   * @param {{ from: ZooKeeperServer, to: ZooKeeperServer, proxy: TcpProxy }[]} [links]
   */
  constructor(servers, links = []) {
    /** @readonly */
    this.servers = servers;
    /** @readonly */
    this.links = links;
  }

  /** The client connection string of every member. */
  get connectionString() {
    return this.servers.map((server) => server.address).join(',');
  }

  /**
   * @param {number} [size]
   * @param {{ syncLimit?: number, partitionable?: boolean }} [options] `syncLimit`: in ticks
   *   (default 10); `partitionable`: whether the members reach each other through proxies
   * @returns {Promise<ZooKeeperEnsemble>}
   */
  static async start(size = 3, { syncLimit, partitionable = false } = {}) {
    assertAllTier('A ZooKeeper ensemble');
    assertZooKeeperInstalled();
    /** @type {number[]} */
    const ports = [];
    for (let i = 0; i < size * 3; i++) ports.push(await freePort());
    const ids = Array.from({ length: size }, (_, i) => i);
    /** @type {{ from: number, to: number, proxy: TcpProxy }[]} */
    const links = [];
    /**
     * The `server.N=` lines member `from` reads: its own ports, and the others' directly or
     * through proxies of this member's own (one to a member's quorum port, which a follower
     * connects to its leader through, one to its election port).
     * @param {number} from
     */
    const peersOf = async (from) => {
      const lines = [];
      for (const to of ids) {
        let [quorum, election] = [ports[3 * to + 1], ports[3 * to + 2]];
        if (partitionable && to !== from) {
          const proxies = [await TcpProxy.start(quorum), await TcpProxy.start(election)];
          for (const proxy of proxies) links.push({ from, to, proxy });
          [quorum, election] = proxies.map((proxy) => proxy.port);
        }
        lines.push(`server.${to + 1}=127.0.0.1:${quorum}:${election}`);
      }
      return lines;
    };
    /** @type {ZooKeeperServer[]} */
    const servers = [];
    for (const i of ids) {
      servers.push(
        new ZooKeeperServer({
          port: ports[3 * i],
          dir: mkdtempSync(join(tmpdir(), `lock-zk-${i + 1}-`)),
          id: i + 1,
          peers: await peersOf(i),
          syncLimit,
        }),
      );
    }
    await Promise.all(servers.map((server) => server.launch()));
    await Promise.all(servers.map((server) => server.serving()));
    return new ZooKeeperEnsemble(
      servers,
      links.map(({ from, to, proxy }) => ({ from: servers[from], to: servers[to], proxy })),
    );
  }

  /** The member that leads now (waits for an election to end). */
  async leader() {
    for (let tries = 0; tries < 600; tries++) {
      for (const server of this.servers) if (await server.isLeader()) return server;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the ensemble has no leader');
  }

  /**
   * Holds every byte between `server` and the other members, both ways, until {@link heal}: the
   * connections stay open and silent, as in a network partition, and `server` goes on serving
   * its clients until it notices (after `syncLimit` ticks). Needs a partitionable ensemble.
   * @param {ZooKeeperServer} server
   */
  isolate(server) {
    const cut = this.links.filter(({ from, to }) => from === server || to === server);
    if (cut.length === 0) throw new Error('the ensemble was not started partitionable');
    for (const { proxy } of cut) proxy.stall();
  }

  /** Lets the members' traffic flow again, delivering what was held. */
  heal() {
    for (const { proxy } of this.links) proxy.resume();
  }

  async stop() {
    await Promise.all([
      ...this.servers.map((server) => server.stop()),
      ...this.links.map(({ proxy }) => proxy.stop()),
    ]);
  }
}
