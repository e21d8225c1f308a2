import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis-server.js';
import { assertAllTier } from './tiers.js';

/**
 * Where Debian and Ubuntu put the server binaries, or what `pg_config` says.
 * @returns {string}
 */
export function postgresBinDir() {
  const fromConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const candidates = [
    fromConfig.status === 0 ? fromConfig.stdout.trim() : '',
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql').map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
  ];
  const dir = candidates.find((candidate) => candidate && existsSync(join(candidate, 'initdb')));
  if (!dir) {
    throw new Error(
      'PostgreSQL server binaries (initdb, pg_ctl) were not found; the PostgreSQL tests start a ' +
        'throwaway PostgreSQL. Install it, e.g. `sudo apt-get install -y postgresql`.',
    );
  }
  return dir;
}

/**
 * A throwaway PostgreSQL cluster in a temporary directory on a free loopback port, with trust
 * authentication and no durability, that a test starts, restarts and stops. As root it runs as
 * the `postgres` user, since PostgreSQL refuses to run as root.
 *
 * Plain JavaScript with JSDoc types, so that both the TypeScript specs and the plain ESM
 * safety checker can use it.
 */
export class PostgresServer {
  /**
   * Use {@link PostgresServer.start}.
   * @param {string} bin
   * @param {string} dir
   * @param {number} port
   * @param {string[]} asUser
   */
  constructor(bin, dir, port, asUser) {
    this.bin = bin;
    this.dir = dir;
    /** @readonly */
    this.port = port;
    this.asUser = asUser;
  }

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** @returns {Promise<PostgresServer>} */
  static async start() {
    assertAllTier('PostgreSQL');
    const bin = postgresBinDir();
    const dir = mkdtempSync(join(tmpdir(), 'lock-pg-'));
    const asUser = userInfo().uid === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
    if (asUser.length > 0) {
      const uid = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
      const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim();
      chownSync(dir, Number(uid), Number(gid));
    }
    const server = new PostgresServer(bin, dir, await freePort(), asUser);
    server.run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres']);
    server.startServer();
    return server;
  }

  /**
   * Stops the server (`fast`: sessions are cut, as a failover cuts them; `immediate` skips the
   * checkpoint, as a crash would) and starts it again on the same port with its data.
   * @param {'fast' | 'immediate'} [mode]
   */
  async restart(mode = 'immediate') {
    this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', 'stop']);
    this.startServer();
  }

  async stop() {
    this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    rmSync(this.dir, { recursive: true, force: true });
  }

  startServer() {
    this.run('pg_ctl', [
      '-D',
      join(this.dir, 'data'),
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      join(this.dir, 'log'),
      '-w',
      'start',
    ]);
  }

  /**
   * @param {string} tool
   * @param {string[]} args
   */
  run(tool, args) {
    const [command, ...prefix] = [...this.asUser, join(this.bin, tool)];
    const result = spawnSync(command, [...prefix, ...args], { encoding: 'utf8' });
    if (result.status !== 0) {
      throw new Error(`${tool} failed: ${result.stderr || result.stdout || String(result.error)}`);
    }
  }
}
