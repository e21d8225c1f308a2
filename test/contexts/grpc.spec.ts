import { Controller, type INestMicroservice } from '@nestjs/common';
import { GrpcMethod, Transport } from '@nestjs/microservices';
import { Test, type TestingModule } from '@nestjs/testing';
import { credentials, loadPackageDefinition, status, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { WithLock } from '../../src/index.js';
import { freePort } from '../support/redis-server.js';
import {
  beginShutdown,
  conflictMessage,
  lockModule,
  shuttingDownMessage,
  SUBMIT_WINDOW_MS,
  whileOrderHeld,
} from './orders.js';

const PROTO = fileURLToPath(new URL('./orders.proto', import.meta.url));

interface Order {
  id: string;
}

@Controller()
class OrdersHandler {
  @GrpcMethod('Orders', 'Edit')
  @WithLock('order:<order.id>')
  edit(order: Order) {
    return { done: `edited ${order.id}` };
  }

  @GrpcMethod('Orders', 'Submit')
  @WithLock('submit:<order.id>', { holdFor: SUBMIT_WINDOW_MS })
  submit(order: Order) {
    return { done: `submitted ${order.id}` };
  }
}

/** What a plain grpc-js client gets back from one unary call. */
interface Answer {
  error?: ServiceError;
  outcome?: { done: string };
}

type UnaryMethod = (
  request: Order,
  callback: (error: ServiceError | null, outcome?: { done: string }) => void,
) => void;

describe('a held lock in a gRPC microservice', () => {
  let module: TestingModule;
  let server: INestMicroservice;
  let client: { Edit: UnaryMethod; Submit: UnaryMethod; close(): void };

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [lockModule()],
      controllers: [OrdersHandler],
    }).compile();
    const url = `127.0.0.1:${await freePort()}`;
    server = module.createNestMicroservice({
      transport: Transport.GRPC,
      options: { package: 'orders', protoPath: PROTO, url },
      logger: false,
    });
    await server.listen();
    const definition = loadPackageDefinition(loadSync(PROTO)) as unknown as {
      orders: { Orders: new (url: string, creds: unknown) => typeof client };
    };
    client = new definition.orders.Orders(url, credentials.createInsecure());
  });

  afterAll(async () => {
    client.close();
    await server.close();
  });

  const call = (method: 'Edit' | 'Submit', id: string) =>
    new Promise<Answer>((resolve) =>
      client[method].call(client, { id }, (error, outcome) =>
        resolve(error ? { error } : { outcome }),
      ),
    );

  it('fails a call on a held lock with ABORTED and the message', async () => {
    await whileOrderHeld(module, '1', async () => {
      const { error } = await call('Edit', '1');
      expect(error?.code).toBe(status.ABORTED);
      expect(error?.details).toBe(conflictMessage('1'));
      expect(error?.metadata.get('lock-code')).toEqual(['LOCK_CONFLICT']);
      expect(error?.metadata.get('retry-after-ms')).toEqual([]);
    });
    expect(await call('Edit', '1')).toEqual({ outcome: { done: 'edited 1' } });
  });

  it('fails a call within a holdFor window with RESOURCE_EXHAUSTED and the time left', async () => {
    expect(await call('Submit', '2')).toEqual({ outcome: { done: 'submitted 2' } });
    const { error } = await call('Submit', '2');
    expect(error?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error?.metadata.get('lock-code')).toEqual(['LOCK_THROTTLED']);
    const [retryAfterMs] = error?.metadata.get('retry-after-ms') ?? [];
    expect(Number(retryAfterMs)).toBeGreaterThan(0);
    expect(Number(retryAfterMs)).toBeLessThanOrEqual(SUBMIT_WINDOW_MS);
  });

  // Last: the app takes no more locks.
  it('fails a call with UNAVAILABLE, which clients retry, once shutdown has begun', async () => {
    await beginShutdown(module);
    const { error } = await call('Edit', '3');
    expect(error?.code).toBe(status.UNAVAILABLE);
    expect(error?.details).toBe(shuttingDownMessage('3'));
    expect(error?.metadata.get('lock-code')).toEqual(['LOCK_SHUTTING_DOWN']);
    expect(error?.metadata.get('retry-after-ms')).toEqual([]);
  });
});
