import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether a `redis-server` binary is on PATH. */
export function redisServerOnPath(): boolean {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return !probe.error && probe.status === 0;
}

/** A port that was free on the loopback interface a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * A `redis-server` for one demo run: loopback only, nothing saved to disk, stopped at the end.
 * It runs in a process group of its own, so that Ctrl-C reaches the demo, which stops the app
 * processes before their Redis.
 */
export class ThrowawayRedis {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts a server on a free port, trying another port if that one was taken meanwhile. */
  static async start(): Promise<ThrowawayRedis> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        return await ThrowawayRedis.launch(port);
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  }

  /** Stops the server and waits for it to exit. */
  async stop(): Promise<void> {
    if (!this.running) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  }

  /** Kills the server at once; for the last moment of a process that is exiting anyway. */
  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  private get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private static async launch(port: number): Promise<ThrowawayRedis> {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ];
    const child = spawn('redis-server', [...args, '--loglevel', 'warning'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ThrowawayRedis(child, port);
    let output = '';
    const collect = (chunk: Buffer) => (output += chunk.toString());
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const exited = once(child, 'exit').then(([code]) => {
      throw new Error(`redis-server exited with code ${code}: ${output.trim()}`);
    });
    exited.catch(() => undefined);
    try {
      await Promise.race([exited, waitForPong(port)]);
    } catch (error) {
      server.killNow();
      throw error;
    }
    child.stdout.off('data', collect).resume();
    child.stderr.off('data', collect).resume();
    return server;
  }
}

/** Resolves once a server on `port` answers PING; gives up after 5 s. */
async function waitForPong(port: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    if (await pong(port)) return;
    await sleep(20);
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 5 s`);
}

function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}
