import { Controller, type INestApplication, type INestMicroservice } from '@nestjs/common';
import { ClientTCP, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test, type TestingModule } from '@nestjs/testing';
import type { AddressInfo, Server } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { WithLock } from '../../src/index.js';
import {
  beginShutdown,
  conflictBody,
  lockModule,
  shuttingDownBody,
  SUBMIT_WINDOW_MS,
  throttleBody,
  whileOrderHeld,
  withinWindow,
} from './orders.js';

@Controller()
class OrdersHandler {
  @MessagePattern('order.edit')
  @WithLock('order:<id>')
  edit(@Payload('id') id: string) {
    return { edited: id };
  }

  @MessagePattern('order.submit')
  @WithLock('submit:<id>', { holdFor: SUBMIT_WINDOW_MS })
  submit(@Payload('id') id: string) {
    return { submitted: id };
  }
}

/** Starts the handlers in a TCP microservice, standalone or beside an HTTP app (hybrid). */
const servers: [
  string,
  (module: TestingModule) => Promise<INestMicroservice | INestApplication>,
][] = [
  [
    'standalone',
    async (module) => {
      const microservice = module.createNestMicroservice({ ...tcp, logger: false });
      await microservice.listen();
      return microservice;
    },
  ],
  [
    'hybrid, inheriting the app config',
    async (module) => {
      const app = module.createNestApplication({ logger: false });
      app.connectMicroservice(tcp, { inheritAppConfig: true });
      await app.startAllMicroservices();
      await app.init();
      return app;
    },
  ],
];

const tcp = { transport: Transport.TCP, options: { host: '127.0.0.1', port: 0 } } as const;

describe.each(servers)('a held lock in a TCP microservice (%s)', (_, start) => {
  let module: TestingModule;
  let server: INestMicroservice | INestApplication;
  let client: ClientTCP;

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [lockModule()],
      controllers: [OrdersHandler],
    }).compile();
    server = await start(module);
    const microservice = 'getMicroservices' in server ? server.getMicroservices()[0] : server;
    const { port } = microservice.unwrap<Server>().address() as AddressInfo;
    // No timeout on the client: a server that never replies would hang the call.
    client = new ClientTCP({ host: '127.0.0.1', port });
    await client.connect();
  });

  afterAll(async () => {
    client.close();
    await server.close();
  });

  const send = (pattern: string, id: string) => firstValueFrom(client.send(pattern, { id }));

  it('replies to a client without a timeout with a LOCK_CONFLICT error it can branch on', async () => {
    await whileOrderHeld(module, '1', async () => {
      await expect(send('order.edit', '1')).rejects.toEqual({
        status: 'error',
        ...conflictBody('1'),
      });
    });
    await expect(send('order.edit', '1')).resolves.toEqual({ edited: '1' });
  });

  it('replies to a call within a holdFor window with LOCK_THROTTLED and the time left', async () => {
    await expect(send('order.submit', '2')).resolves.toEqual({ submitted: '2' });
    const error: unknown = await send('order.submit', '2').catch((e: unknown) => e);
    expect(error).toEqual({
      status: 'error',
      ...throttleBody('2'),
    });
    withinWindow((error as { retryAfterMs: number }).retryAfterMs);
  });

  // Last: the app takes no more locks.
  it('replies with LOCK_SHUTTING_DOWN and 503 once shutdown has begun', async () => {
    await beginShutdown(module);
    await expect(send('order.edit', '3')).rejects.toEqual({
      status: 'error',
      ...shuttingDownBody('3'),
    });
  });
});
