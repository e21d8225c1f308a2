import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { compileApp } from '../support/compile-app.js';
import { sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

const CLIENT_PROCESS = fileURLToPath(new URL('../support/client-process.mjs', import.meta.url));
const HIDE_PACKAGES = fileURLToPath(new URL('../support/hide-packages.mjs', import.meta.url));

/** Boots the built library in a process of its own without `hidden`; what it reported. */
async function bootWithout(
  hidden: string,
  redisClient: 'ioredis' | 'node-redis' | 'glide',
): Promise<{ fencingToken?: number; error?: string }> {
  const child = fork(CLIENT_PROCESS, [], {
    execArgv: ['--import', HIDE_PACKAGES],
    stdio: 'inherit',
    env: {
      ...process.env,
      HIDE_PACKAGES: hidden,
      LOCK_REDIS_URL: sharedRedisUrl(),
      LOCK_REDIS_CLIENT: redisClient,
      LOCK_KEY_PREFIX: uniquePrefix(),
    },
  });
  const exited = once(child, 'exit');
  const [message] = (await Promise.race([
    once(child, 'message'),
    exited.then(() => [{ error: 'the process exited without a word' }]),
  ])) as [{ fencingToken?: number; error?: string }];
  await exited;
  return message;
}

/** Each client library is an optional peer: an app installs the one it uses. */
describe('the client packages', () => {
  it('locks through GLIDE in an app that has no ioredis', async () => {
    expect(await bootWithout('ioredis,iovalkey', 'glide')).toEqual({
      fencingToken: expect.any(Number) as unknown,
    });
  });

  it('locks through node-redis in an app that has no other client', async () => {
    expect(await bootWithout('ioredis,iovalkey,@valkey/valkey-glide', 'node-redis')).toEqual({
      fencingToken: expect.any(Number) as unknown,
    });
  });

  it('locks through ioredis in an app that has no GLIDE', async () => {
    expect(await bootWithout('@valkey/valkey-glide', 'ioredis')).toEqual({
      fencingToken: expect.any(Number) as unknown,
    });
  });

  it('refuses redisClient: glide at boot, naming the package, in an app without it', async () => {
    const { error } = await bootWithout('@valkey/valkey-glide', 'glide');
    expect(error).toMatch(/^LockOptionsError: .*"redisClient".*npm install @valkey\/valkey-glide/);
  });
});

/** Every optional peer but node-redis: what an app on node-redis alone does not install. */
const OPTIONAL_BUT_NODE_REDIS = [
  'ioredis',
  'iovalkey',
  '@valkey/valkey-glide',
  'pg',
  'node-zookeeper-client',
  '@opentelemetry/api',
  '@nestjs/terminus',
];

/** An app's use of the library: a provider with the decorator, the service and the health check. */
const PROVIDER = `
@Injectable()
class Orders {
  constructor(
    private readonly locks: LockService,
    readonly health: LockHealthIndicator,
  ) {}

  @WithLock('order:<id>', { waitTimeout: 5_000 })
  async pay(id: string): Promise<string> {
    return id;
  }

  ship(id: string): Promise<number> {
    return this.locks.using(\`ship:\${id}\`, (lock: Lock) => lock.fencingToken);
  }
}
`;

const HEAD = `
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import {
  LockHealthIndicator,
  LockModule,
  LockService,
  WithLock,
  type Lock,
  type LockModuleOptions,
} from 'nestjs-redis-lock';
`;

/**
 * The published types (dist/*.d.ts) compile in an app that installed only the packages it
 * uses, with `skipLibCheck: false`: they need no optional peer's types.
 */
describe('the published types', () => {
  it('compile in an app on node-redis alone, that passes its clients', () => {
    const app = `${HEAD}
import { createClient, createCluster, createSentinel } from 'redis';
${PROVIDER}
const choices: LockModuleOptions[] = [
  { redis: createClient({ url: 'redis://127.0.0.1:6379' }) },
  { redis: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) },
  {
    redis: createSentinel({ name: 'main', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] }),
  },
  { redis: { host: '127.0.0.1', port: 6379, db: 1 }, redisClient: 'node-redis' },
  { redis: { cluster: ['127.0.0.1:7000'] }, redisClient: 'node-redis' },
  { redis: ['redis://a', 'redis://b', 'redis://c'], redisClient: 'node-redis' },
];

@Module({ imports: [LockModule.forRoot(choices[0]!)], providers: [Orders] })
export class AppModule {}
`;
    expect(compileApp(app, OPTIONAL_BUT_NODE_REDIS)).toEqual([]);
  });

  it('compile in an app with no optional peer at all', () => {
    const app = `${HEAD}${PROVIDER}
@Module({ imports: [LockModule.forRoot({ store: 'memory' })], providers: [Orders] })
export class AppModule {}
`;
    expect(compileApp(app, [...OPTIONAL_BUT_NODE_REDIS, 'redis'])).toEqual([]);
  });

  it("take each client library's own clients and options, in an app that has them all", () => {
    const app = `${HEAD}
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { Redis as ValkeyRedis } from 'iovalkey';
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
${PROVIDER}
declare const redisOptions: RedisOptions;
declare const clusterOptions: ClusterOptions;
declare const glide: GlideClient;
declare const glideCluster: GlideClusterClient;

const choices: LockModuleOptions[] = [
  { redis: new Redis() },
  { redis: new Cluster([{ host: '127.0.0.1', port: 7000 }]) },
  { redis: redisOptions },
  { redis: { host: '127.0.0.1', enableAutoPipelining: true, retryStrategy: () => 100 } },
  { redis: { sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'main' } },
  { redis: { cluster: [7000, '127.0.0.1:7001', { host: '127.0.0.1' }], clusterOptions } },
  { redis: { cluster: [7000], clusterOptions: { scaleReads: 'master', redisOptions } } },
  { redis: new ValkeyRedis(), redisClient: 'iovalkey' },
  { redis: glide },
  { redis: glideCluster },
  { redis: [new Redis(), redisOptions, 'redis://c'] },
];

@Module({ imports: [LockModule.forRoot(choices[0]!)], providers: [Orders] })
export class AppModule {}
`;
    expect(compileApp(app, [])).toEqual([]);
  });
});
