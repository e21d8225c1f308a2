import { Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { ClientTCP, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import { LockHealthIndicator, LockModule, LockService, WithLock } from '../../src/index.js';
import { until } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';
import { RedisServer } from '../support/redis-server.js';

@Controller()
class OrdersController {
  @Post('orders/:id/edit')
  @WithLock('order:<id>')
  edit(@Param('id') id: string) {
    return { edited: id };
  }

  @MessagePattern('order.edit')
  @WithLock('order:<id>')
  editByMessage(@Payload('id') id: string) {
    return { edited: id };
  }
}

@Injectable()
class Settlements {
  constructor(readonly locks: LockService) {}
}

/** What every context answers when the lock store cannot be reached. */
const unavailable = (id: string) => ({
  statusCode: 503,
  error: 'Service Unavailable',
  code: 'LOCK_STORE_UNAVAILABLE',
  message: `Lock "order:${id}": the lock store is unavailable, try again`,
  retryAfterMs: 1_000,
});

/**
 * The lock store goes away under a running app (HTTP and a TCP microservice beside it). The
 * commandTimeout is a minute, longer than any test may run: a call that does not wait is
 * refused because the client already knows its connection is down, not because an answer
 * failed to come.
 */
describe('a lock store outage', () => {
  let server: RedisServer;
  let app: INestApplication<Server>;
  let client: ClientTCP;

  beforeAll(async () => {
    server = await RedisServer.start();
    const module = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({
          redis: server.url,
          keyPrefix: uniquePrefix(),
          commandTimeout: 60_000,
        }),
      ],
      controllers: [OrdersController],
      providers: [Settlements],
    }).compile();
    app = module.createNestApplication({ logger: false });
    app.connectMicroservice(
      { transport: Transport.TCP, options: { host: '127.0.0.1', port: 0 } },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
    const microservice = app.getMicroservices()[0].unwrap<NetServer>();
    client = new ClientTCP({
      host: '127.0.0.1',
      port: (microservice.address() as AddressInfo).port,
    });
    await client.connect();
    expect((await request(app.getHttpServer()).post('/orders/1/edit')).status).toBe(201);
    await server.kill();
    // Once the client has seen its connection go (the health indicator says down without a
    // round trip when it has), a call that does not wait must not send anything.
    const health = app.get(LockHealthIndicator);
    await until(async () => (await health.isHealthy()).lock.status === 'down', 10_000);
  });

  afterAll(async () => {
    client.close();
    await app.close();
    await server.stop();
  });

  it('answers HTTP with 503, Retry-After and LOCK_STORE_UNAVAILABLE, at once', async () => {
    const answer = await request(app.getHttpServer()).post('/orders/2/edit');
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.body).toEqual(unavailable('2'));
    // The client's own error (addresses, ports) stays out of the answer.
    expect(JSON.stringify(answer.body)).not.toContain('127.0.0.1');
  });

  it('answers RPC with an error reply of the same body', async () => {
    const reply = firstValueFrom(client.send('order.edit', { id: '3' }));
    await expect(reply).rejects.toEqual({ status: 'error', ...unavailable('3') });
  });

  // Last: the store comes back.
  it('keeps a caller that may wait waiting until the store is back, then grants it', async () => {
    const locks = app.get(Settlements).locks;
    const waited = locks.acquire('order:4', { waitTimeout: 20_000 });
    await sleep(300);
    await server.restart();
    const lock = await waited;
    expect(lock.fencingToken).toBeGreaterThan(0);
    await lock.release();
    expect((await request(app.getHttpServer()).post('/orders/5/edit')).status).toBe(201);
  });
});
