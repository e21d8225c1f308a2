import { fork } from 'node:child_process';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import {
  Controller,
  Get,
  type INestApplication,
  type INestApplicationContext,
} from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockHealthIndicator, LockModule, LockService } from '../../src/index.js';
import { until } from '../support/backends.js';
import { RedisServer } from '../support/redis-server.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { onlyIn } from '../support/tiers.js';

/** Matchers, typed as what they stand for in a report. */
const aNumber: unknown = expect.any(Number);
const aString: unknown = expect.any(String);

const HEALTH_PROCESS = fileURLToPath(new URL('../support/health-process.mjs', import.meta.url));
const HIDE_TERMINUS = fileURLToPath(new URL('../support/hide-terminus.mjs', import.meta.url));

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy()]);
  }
}

onlyIn('all', () => {
  describe('the lock health indicator on ZooKeeper', () => {
    let server: ZooKeeperServer;
    let app: INestApplicationContext;

    beforeAll(async () => {
      server = await ZooKeeperServer.start();
      const module = await Test.createTestingModule({
        imports: [
          LockModule.forRoot({
            zookeeper: { connectionString: server.address, sessionTimeout: 4_000 },
            commandTimeout: 500,
          }),
        ],
      }).compile();
      app = await module.init();
    }, 60_000);

    afterAll(async () => {
      await app?.close();
      await server?.stop();
    });

    it('says the session state: connected while up, disconnected once the server is gone', async () => {
      const indicator = app.get(LockHealthIndicator);
      expect(await indicator.isHealthy()).toEqual({
        lock: {
          status: 'up',
          backend: 'zookeeper',
          latencyMs: aNumber,
          session: 'SYNC_CONNECTED',
        },
      });
      await server.kill();
      expect(await indicator.isHealthy()).toEqual({
        lock: {
          status: 'down',
          backend: 'zookeeper',
          message: aString,
          session: 'DISCONNECTED',
        },
      });
    });
  });
});

describe('the lock health indicator', () => {
  let server: RedisServer;
  let app: INestApplication<Server>;

  beforeAll(async () => {
    server = await RedisServer.start();
    const module = await Test.createTestingModule({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        LockModule.forRoot({ redis: server.url, commandTimeout: 500 }),
      ],
      controllers: [HealthController],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await server?.stop();
  });

  const health = () => request(app.getHttpServer()).get('/health');

  it('answers 200 while Redis answers, 503 once it is gone, and 200 when it is back', async () => {
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({
      status: 'ok',
      info: { lock: { status: 'up', backend: 'redis', latencyMs: aNumber } },
    });
    await server.kill();
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: 'error',
      error: { lock: { status: 'down', backend: 'redis', message: aString } },
    });
    await server.restart();
    await until(async () => (await health()).status === 200, 10_000);
    expect((await health()).body).toMatchObject({ info: { lock: { status: 'up' } } });
  });

  it('says degraded, with how many, while renewals run late, and up once they have caught up', async () => {
    const indicator = app.get(LockHealthIndicator);
    const lock = await app.get(LockService).acquire('slow-loop', { ttl: 1_000 });
    // The event loop stalls: the renewal due a third of the ttl in has not run yet.
    const stalledUntil = performance.now() + 700;
    while (performance.now() < stalledUntil);
    expect(await indicator.isHealthy()).toEqual({
      lock: { status: 'degraded', backend: 'redis', latencyMs: aNumber, lateRenewals: 1 },
    });
    await until(async () => (await indicator.isHealthy()).lock.status === 'up', 5_000);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('names the indicator as asked', async () => {
    const indicator = app.get(LockHealthIndicator);
    expect(await indicator.isHealthy('locks-redis')).toEqual({
      'locks-redis': { status: 'up', backend: 'redis', latencyMs: aNumber },
    });
  });

  it('is not what loads terminus: an app without it boots, and its indicator answers by hand', async () => {
    const child = fork(HEALTH_PROCESS, [], { execArgv: ['--import', HIDE_TERMINUS] });
    let message: unknown = 'no message: the process failed before it could send one';
    child.on('message', (sent) => (message = sent));
    await once(child, 'exit');
    expect(message).toEqual({
      terminus: 'hidden',
      health: { lock: { status: 'up', backend: 'memory', latencyMs: aNumber } },
    });
  });
});
