import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, get, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import { bootLockApp, sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

const APP = fileURLToPath(new URL('../support/draining-app.mjs', import.meta.url));

interface AppMessage {
  booted?: number;
  slowStarted?: boolean;
  aborted?: string;
  usingRejected?: string;
}

/** The next message from `child` that has `field`; rejects if the child exits first. */
function message<K extends keyof AppMessage>(
  child: ChildProcess,
  field: K,
): Promise<NonNullable<AppMessage[K]>> {
  return new Promise((resolve, reject) => {
    const listener = (received: AppMessage) => {
      if (received[field] === undefined) return;
      child.off('message', listener);
      child.off('exit', exited);
      resolve(received[field]);
    };
    const exited = () => reject(new Error(`the app exited before it sent ${field}`));
    child.on('message', listener);
    child.once('exit', exited);
  });
}

/** A GET on `agent`, with whether it went over a connection the agent kept, and the body. */
function getOn(agent: Agent, url: string) {
  return new Promise<{ response: IncomingMessage; reused: boolean; body: unknown }>(
    (resolve, reject) => {
      const request = get(url, { agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ response, reused: request.reusedSocket, body: JSON.parse(text) }),
        );
      }).on('error', reject);
    },
  );
}

describe.each(['express', 'fastify'])('shutdown order, HTTP on %s', (adapter) => {
  it("frees the process's locks when shutdown begins, not after the HTTP server has drained; meanwhile a lock call answers 503", async () => {
    const prefix = uniquePrefix();
    const app = fork(APP, [], {
      env: {
        ...process.env,
        DRAIN_REDIS_URL: sharedRedisUrl(),
        DRAIN_KEY_PREFIX: prefix,
        DRAIN_KEY: 'job',
        DRAIN_ADAPTER: adapter,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const agent = new Agent({ keepAlive: true });
    const other = await bootLockApp({ redis: sharedRedisUrl(), keyPrefix: prefix });
    try {
      const port = await message(app, 'booted');
      const slowStarted = message(app, 'slowStarted');
      let answered = false;
      const slow = new Promise<number | undefined>((resolve, reject) => {
        get(`http://127.0.0.1:${port}/slow`, { agent }, (response) => {
          response.resume();
          response.on('end', () => {
            answered = true;
            resolve(response.statusCode);
          });
        }).on('error', reject);
      });
      await slowStarted;
      // A connection the client keeps open, as a load balancer or an HTTP client pool does.
      expect((await getOn(agent, `http://127.0.0.1:${port}/orders/1`)).response.statusCode).toBe(
        200,
      );
      const aborted = message(app, 'aborted');
      const rejected = message(app, 'usingRejected');

      app.kill('SIGTERM');
      // Another instance gets the lock while this one still serves a request...
      const lock = await other.locks.acquire('job', { waitTimeout: 15_000 });
      expect(answered).toBe(false);
      expect(app.exitCode).toBeNull();
      // ...and the work that held it was told before it was released.
      expect(await aborted).toContain('the lock service shut down');
      expect(await rejected).toBe('LockLostError');
      await lock.release();

      // The app is in its grace period: a request that comes over the kept connection and asks
      // for a lock is told to go elsewhere, and the connection is closed behind it.
      const refused = await getOn(agent, `http://127.0.0.1:${port}/orders/2`);
      expect(refused.reused).toBe(true);
      expect(refused.response.statusCode).toBe(503);
      expect(refused.response.headers.connection).toBe('close');
      expect(refused.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'LOCK_SHUTTING_DOWN',
        message:
          'Lock "order:2" was not taken: the lock service of this instance is shutting down; ' +
          'retry on another instance',
      });
      const { socket } = refused.response;
      if (!socket.destroyed) await once(socket, 'close');

      const exited = once(app, 'exit');
      app.send('leave');
      app.send('finish');
      expect(await slow).toBe(200);
      // Fastify keeps an idle keep-alive socket open (72 s by default) even while closing:
      // the client lets go of it here, as it would when its own idle timeout ran out.
      agent.destroy();
      await exited;
    } finally {
      agent.destroy();
      if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
      await other.close();
    }
  }, 60_000);
});
