import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { endProcess, freePort, registerPid } from './redis-server.js';
import { assertAllTier } from './tiers.js';

/** Where Debian installs it, or on the PATH. */
export function pgbouncerBinary() {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) {
    if (existsSync(candidate)) return candidate;
  }
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' });
  if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  throw new Error(
    'pgbouncer was not found; the PgBouncer test starts one of its own. Install it, e.g. ' +
      '`sudo apt-get install -y pgbouncer` (Debian/Ubuntu), then run `npm test` again.',
  );
}

/**
 * A throwaway PgBouncer on a free loopback port in front of one database of a throwaway
 * PostgreSQL, in transaction mode (a server connection is lent to a client for one transaction
 * only) with a small pool, so that the clients' statements really share server connections. As
 * root it runs as the `postgres` user, since PgBouncer refuses to run as root.
 *
 * Plain JavaScript with JSDoc types, as the other servers of the test harness.
 */
export class PgBouncer {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  #process;

  /**
   * Use {@link PgBouncer.start}.
   * @param {string} dir
   * @param {number} port
   */
  constructor(dir, port) {
    this.dir = dir;
    /** @readonly */
    this.port = port;
  }

  /** The URL of database `postgres` through the bouncer. */
  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /**
   * @param {number} postgresPort the PostgreSQL server's port on the loopback interface
   * @param {{ poolSize?: number }} [options] server connections per user and database
   * @returns {Promise<PgBouncer>}
   */
  static async start(postgresPort, { poolSize = 2 } = {}) {
    assertAllTier('PgBouncer');
    const binary = pgbouncerBinary();
    const dir = mkdtempSync(join(tmpdir(), 'lock-pgbouncer-'));
    const port = await freePort();
    writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `postgres = host=127.0.0.1 port=${postgresPort} dbname=postgres`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'pool_mode = transaction',
        `default_pool_size = ${poolSize}`,
        'max_client_conn = 500',
        '',
      ].join('\n'),
    );
    const asRoot = userInfo().uid === 0;
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      for (const file of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), uid, gid);
    }
    const bouncer = new PgBouncer(dir, port);
    const child = spawn(
      binary,
      [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    bouncer.#process = child;
    registerPid(child.pid);
    let output = '';
    child.stderr?.on('data', (chunk) => (output = (output + String(chunk)).slice(-2000)));
    // Its exit is checked first: another process that took the port meanwhile would accept too.
    for (let tries = 0; ; tries++) {
      if (child.exitCode !== null || tries > 200) {
        await bouncer.stop();
        throw new Error(`pgbouncer did not start: ${output}`);
      }
      if (await accepts(port)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return bouncer;
  }

  async stop() {
    const child = this.#process;
    this.#process = undefined;
    await endProcess(child, 'SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Whether something accepts TCP connections on `port`.
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
