import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, get, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { LockModuleOptions } from '../../src/index.js';
import {
  bootLockApp,
  rawClient,
  sharedRedisUrl,
  sleep,
  uniquePrefix,
  type LockApp,
} from '../support/lock-app.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { byTier } from '../support/tiers.js';

const APP = fileURLToPath(new URL('../support/draining-app.mjs', import.meta.url));

interface AppMessage {
  booted?: number;
  jobStarted?: string;
  backgroundEnded?: string;
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

/**
 * Another instance that asks for `name` over and over (`tryAcquire`, every 10 ms) until told to
 * stop; each time it gets the lock, it looks at the deployed app's marker of the work under
 * that lock: set, the two instances overlapped.
 */
function hammer(other: LockApp, prefix: string, name: string) {
  const marks = rawClient(sharedRedisUrl());
  const state = { grants: 0, overlaps: 0, stop: false };
  const done = (async () => {
    while (!state.stop) {
      const lock = await other.locks.tryAcquire(name).catch(() => null);
      if (lock) {
        state.grants++;
        if ((await marks.get(`${prefix}inside:${name}`)) !== null) state.overlaps++;
        await lock.release();
      }
      await sleep(10);
    }
    await marks.quit();
  })();
  return Object.assign(state, {
    end: async () => {
      state.stop = true;
      await done;
    },
  });
}

/** Waits until another instance has got `name` at least once since `from` grants. */
async function grantedAfter(counter: { grants: number }, from: number): Promise<void> {
  while (counter.grants <= from) await sleep(10);
}

type Store = 'redis' | 'zookeeper';

describe.each<[Store, string]>(
  byTier({
    quick: [
      ['redis', 'express'],
      ['redis', 'fastify'],
    ],
    all: [['zookeeper', 'express']],
  }),
)('a rolling deploy (%s, HTTP on %s): SIGTERM while work runs under locks', (store, adapter) => {
  let zookeeper: ZooKeeperServer | undefined;

  beforeAll(async () => {
    if (store === 'zookeeper') zookeeper = await ZooKeeperServer.start();
  }, 60_000);

  afterAll(async () => {
    await zookeeper?.stop();
  });

  function storeOptions(prefix: string): LockModuleOptions {
    return zookeeper
      ? {
          zookeeper: { connectionString: zookeeper.address, root: `/${prefix.replace(/\W/g, '')}` },
          keyPrefix: prefix,
        }
      : { redis: sharedRedisUrl(), keyPrefix: prefix };
  }

  /** Starts the deployed app instance, a process of its own, on this block's store. */
  function deploy(prefix: string, env: Record<string, string> = {}): ChildProcess {
    return fork(APP, [], {
      env: {
        ...process.env,
        ...(zookeeper
          ? { DRAIN_ZOOKEEPER: zookeeper.address }
          : { DRAIN_REDIS_URL: sharedRedisUrl() }),
        DRAIN_MARK_URL: sharedRedisUrl(),
        DRAIN_KEY_PREFIX: prefix,
        DRAIN_ADAPTER: adapter,
        ...env,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  }

  it('lets the work finish under its locks, refuses new calls with 503, frees each lock as its work ends, and exits', async () => {
    const prefix = uniquePrefix();
    const app = deploy(prefix);
    const agent = new Agent({ keepAlive: true });
    const other = await bootLockApp(storeOptions(prefix));
    let onJob: ReturnType<typeof hammer> | undefined;
    let onBackground: ReturnType<typeof hammer> | undefined;
    try {
      const port = await message(app, 'booted');
      const started = message(app, 'jobStarted');
      const job = getOn(agent, `http://127.0.0.1:${port}/jobs/1`);
      expect(await started).toBe('1');
      // The app holds both locks now: the other instance asks for them from here on.
      onJob = hammer(other, prefix, 'inline-job:1');
      onBackground = hammer(other, prefix, 'background');
      const exited = once(app, 'exit');

      app.kill('SIGTERM');
      // The work goes on under its locks for a while after the signal...
      await sleep(1_500);
      expect(app.exitCode).toBeNull();
      // ...while a request that asks for a lock is sent elsewhere, its connection closed.
      const refused = await getOn(agent, `http://127.0.0.1:${port}/jobs/2`);
      expect(refused.response.statusCode).toBe(503);
      expect(refused.response.headers.connection).toBe('close');
      expect(refused.body).toMatchObject({ code: 'LOCK_SHUTTING_DOWN' });
      // Nobody else got either lock meanwhile.
      expect([onJob.grants, onBackground.grants]).toEqual([0, 0]);

      // The request's work ends: it answers 200, and its lock is free at once, not at its TTL.
      const jobGrants = onJob.grants;
      app.send('finish:1');
      const answered = await job;
      expect(answered.response.statusCode).toBe(200);
      expect(answered.body).toEqual({ id: '1', finished: true });
      await grantedAfter(onJob, jobGrants);
      // The background work still holds its lock until it ends too.
      expect(onBackground.grants).toBe(0);
      expect(app.exitCode).toBeNull();

      const ended = message(app, 'backgroundEnded');
      app.send('finish-background');
      expect(await ended).toBe('finished');
      await grantedAfter(onBackground, 0);
      // Fastify keeps an idle keep-alive socket open even while closing: the client lets go.
      agent.destroy();
      // The instance leaves by itself once the work is done.
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      expect(code === 0 || signal === 'SIGTERM').toBe(true);
      expect([onJob.overlaps, onBackground.overlaps]).toEqual([0, 0]);
    } finally {
      agent.destroy();
      await Promise.all([onJob?.end(), onBackground?.end()]);
      if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
      await other.close();
    }
  }, 60_000);

  it('aborts work that outlasts shutdownGrace and frees its lock then', async () => {
    const prefix = uniquePrefix();
    const app = deploy(prefix, { DRAIN_GRACE: '1500' });
    const other = await bootLockApp(storeOptions(prefix));
    try {
      await message(app, 'booted');
      const ended = message(app, 'backgroundEnded');
      const exited = once(app, 'exit');
      app.kill('SIGTERM');
      expect(await ended).toMatch(/grace period \(shutdownGrace 1500 ms\) ran out/);
      const lock = await other.locks.acquire('background', { waitTimeout: 10_000 });
      await lock.release();
      await exited;
    } finally {
      if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
      await other.close();
    }
  }, 60_000);
});
