import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis-server.js';

/** Where Debian and Ubuntu put the server binaries, or what `pg_config` says. */
function binDir(): string {
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
      'PostgreSQL server binaries (initdb, pg_ctl) were not found; the SQL fencing test starts a ' +
        'throwaway PostgreSQL. Install it, e.g. `sudo apt-get install -y postgresql`.',
    );
  }
  return dir;
}

/**
 * A throwaway PostgreSQL cluster in a temporary directory on a free loopback port, with trust
 * authentication and no durability, that a test starts and stops. As root it runs as the
 * `postgres` user, since PostgreSQL refuses to run as root.
 */
export class PostgresServer {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly asUser: string[],
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async start(): Promise<PostgresServer> {
    const bin = binDir();
    const dir = mkdtempSync(join(tmpdir(), 'lock-pg-'));
    const asUser = userInfo().uid === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
    if (asUser.length > 0) {
      const ids = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
      const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim();
      chownSync(dir, Number(ids), Number(gid));
    }
    const server = new PostgresServer(bin, dir, await freePort(), asUser);
    server.run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres']);
    server.run('pg_ctl', [
      '-D',
      join(dir, 'data'),
      '-o',
      `-p ${server.port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      join(dir, 'log'),
      '-w',
      'start',
    ]);
    return server;
  }

  async stop(): Promise<void> {
    this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private run(tool: string, args: string[]): void {
    const [command, ...prefix] = [...this.asUser, join(this.bin, tool)];
    const result = spawnSync(command, [...prefix, ...args], { encoding: 'utf8' });
    if (result.status !== 0) {
      throw new Error(`${tool} failed: ${result.stderr || result.stdout || result.error}`);
    }
  }
}
