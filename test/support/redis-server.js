import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { assertAllTier } from './tiers.js';

/**
 * Says how to get redis-server (and redis-cli, which forms the test Cluster) when one is
 * missing, instead of failing obscurely later.
 */
export function assertRedisServerInstalled() {
  for (const program of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(program, ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      throw new Error(
        `${program} is not on PATH; the tests start their own Redis servers and Cluster.\n` +
          'Install Redis, e.g. `sudo apt-get install -y redis-server` (Debian/Ubuntu, which ' +
          'brings redis-cli along) or `brew install redis` (macOS), then run `npm test` again.',
      );
    }
  }
}

/** @typedef {'redis-server' | 'valkey-server'} ServerProgram */

/**
 * A free TCP port on the loopback interface, as the kernel hands it out.
 * @returns {Promise<number>}
 */
export async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * Whether `valkey-server` (Valkey 8, which `.ci/run` installs) is on PATH: the specs that run
 * the store on Valkey skip, saying so, where it is not.
 * @returns {boolean}
 */
export function valkeyServerInstalled() {
  const probe = spawnSync('valkey-server', ['--version'], { encoding: 'utf8' });
  return !probe.error && probe.status === 0;
}

/**
 * A throwaway Valkey server, after checking that `valkey-server` is installed.
 * @param {string[]} [extraArgs]
 * @returns {Promise<RedisServer>}
 */
export async function valkeyServer(extraArgs = []) {
  assertAllTier('Valkey');
  if (!valkeyServerInstalled()) {
    throw new Error(
      'valkey-server is not on PATH; the Valkey tests start their own Valkey 8 servers.\n' +
        'On Debian 12, `.ci/run` installs it from bookworm-backports (`apt-get install -t ' +
        'bookworm-backports valkey-server`); elsewhere, see https://valkey.io/download/.',
    );
  }
  return RedisServer.start(extraArgs, 'valkey-server');
}

/**
 * A throwaway `redis-server` (or `valkey-server`, which takes the same arguments) on a free
 * loopback port, with no persistence, that a test starts, kills (for faults), restarts on the
 * same port, and stops.
 */
export class RedisServer {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  #process;

  /**
   * @param {number} port
   * @param {string[]} [extraArgs] more `redis-server` arguments, after the defaults (so they can
   *   override them), used again on {@link restart}
   * @param {ServerProgram} [program] the server to run
   */
  constructor(port, extraArgs = [], program = 'redis-server') {
    /** @readonly */
    this.port = port;
    /** @readonly */
    this.extraArgs = extraArgs;
    /** @readonly */
    this.program = program;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid() {
    return this.#process?.pid;
  }

  /**
   * Starts a server on a free port (retrying if another process takes the port first).
   * @param {string[] | ((port: number) => string[])} [extraArgs] more `redis-server` arguments
   *   (a cluster node, a replica...); a function when they depend on the port, as a cluster
   *   node's config file name does
   * @param {ServerProgram} [program] the server to run
   * @returns {Promise<RedisServer>}
   */
  static async start(extraArgs = [], program = 'redis-server') {
    for (let tries = 0; ; tries++) {
      const port = await freePort();
      const server = new RedisServer(
        port,
        typeof extraArgs === 'function' ? extraArgs(port) : extraArgs,
        program,
      );
      try {
        await server.#launch();
        return server;
      } catch (error) {
        if (tries >= 4) throw error;
      }
    }
  }

  /** Starts the server again on the same port, empty (after {@link kill}). */
  async restart() {
    await this.kill();
    await this.#launch();
  }

  /** SIGKILL: the server vanishes without a word, as in a crash. */
  async kill() {
    await this.#end('SIGKILL');
  }

  /** Stops the server. */
  async stop() {
    await this.#end('SIGTERM');
  }

  /** @param {NodeJS.Signals} signal */
  async #end(signal) {
    const child = this.#process;
    this.#process = undefined;
    await endProcess(child, signal);
  }

  async #launch() {
    const child = spawn(
      this.program,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        '--loglevel',
        'warning',
        '--logfile',
        '',
        ...this.extraArgs,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#process = child;
    let output = '';
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    const exited = once(child, 'exit').then(([code]) => {
      throw new Error(
        `${this.program} on port ${this.port} exited with code ${code}: ${output.trim()}`,
      );
    });
    await Promise.race([exited, waitForPong(this.port, this.program)]);
    exited.catch(() => undefined);
    registerPid(child.pid);
    child.stdout?.removeAllListeners('data');
    child.stderr?.removeAllListeners('data');
    child.stdout?.resume();
    child.stderr?.resume();
  }
}

/** Resolves once the server answers PING; polls, as a starting server refuses connections. */
/**
 * @param {number} port
 * @param {string} program
 */
async function waitForPong(port, program) {
  for (let tries = 0; tries < 500; tries++) {
    const answered = await new Promise((/** @type {(answered: boolean) => void} */ resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.setTimeout(1000);
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
      socket.once('timeout', () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${program} on port ${port} did not answer PING`);
}

/**
 * Sends `signal` to a server process, if it still runs, and resolves once it has exited.
 * @param {import('node:child_process').ChildProcess | undefined} child
 * @param {NodeJS.Signals} signal
 */
export async function endProcess(child, signal) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

/**
 * Records every server's pid in the file named by LOCK_TEST_PIDS (set by the global setup), so
 * that the global teardown can kill whatever a crashed test file left running.
 */
/** @param {number | undefined} pid */
export function registerPid(pid) {
  const file = process.env.LOCK_TEST_PIDS;
  if (file && pid) appendFileSync(file, `${pid}\n`);
}
