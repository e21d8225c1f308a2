import { UseFilters, type INestApplication, type WebSocketAdapter } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test, type TestingModule } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { io } from 'socket.io-client';
import { WebSocket } from 'ws';
import { LockExceptionFilter, WithLock } from '../../src/index.js';
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

// Nest applies no global filter to gateways: they name theirs.
@WebSocketGateway()
@UseFilters(LockExceptionFilter)
class OrdersGateway {
  @SubscribeMessage('order.edit')
  @WithLock('order:<id>')
  edit(@MessageBody('id') id: string) {
    return { edited: id };
  }

  @SubscribeMessage('order.submit')
  @WithLock('submit:<id>', { holdFor: SUBMIT_WINDOW_MS })
  submit(@MessageBody('id') id: string) {
    return { submitted: id };
  }
}

/** What the client receives first after a message: the handler's reply, or an event. */
interface Received {
  event: string;
  data: unknown;
}

interface Client {
  request(pattern: string, data: unknown): Promise<Received>;
  close(): void;
}

/** A socket.io client: a reply comes as the acknowledgement, an error as an event. */
async function socketIoClient(port: number): Promise<Client> {
  const socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], reconnection: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  return {
    request: (pattern, data) =>
      new Promise((resolve) => {
        socket.once('exception', (payload: unknown) =>
          resolve({ event: 'exception', data: payload }),
        );
        socket.emit(pattern, data, (reply: unknown) => resolve({ event: 'reply', data: reply }));
      }),
    close: () => socket.close(),
  };
}

/** A plain WebSocket client speaking the `ws` adapter's `{ event, data }` messages. */
async function wsClient(port: number): Promise<Client> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return {
    request: (pattern, data) =>
      new Promise((resolve) => {
        socket.once('message', (raw: Buffer) => {
          const message: unknown = JSON.parse(raw.toString());
          const isEvent = typeof message === 'object' && message !== null && 'event' in message;
          resolve(isEvent ? (message as Received) : { event: 'reply', data: message });
        });
        socket.send(JSON.stringify({ event: pattern, data }));
      }),
    close: () => socket.close(),
  };
}

const adapters: [
  string,
  (app: INestApplication) => WebSocketAdapter,
  (port: number) => Promise<Client>,
][] = [
  ['socket.io', (app) => new IoAdapter(app), socketIoClient],
  ['ws', (app) => new WsAdapter(app), wsClient],
];

describe.each(adapters)('a held lock in a WebSocket gateway (%s)', (_, adapter, connect) => {
  let module: TestingModule;
  let app: INestApplication<Server>;
  let client: Client;

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [lockModule()],
      providers: [OrdersGateway],
    }).compile();
    app = module.createNestApplication({ logger: false });
    app.useWebSocketAdapter(adapter(app));
    await app.listen(0, '127.0.0.1');
    client = await connect((app.getHttpServer().address() as AddressInfo).port);
  });

  afterAll(async () => {
    client.close();
    await app.close();
  });

  it('sends the client an exception event with LOCK_CONFLICT', async () => {
    await whileOrderHeld(module, '1', async () => {
      expect(await client.request('order.edit', { id: '1' })).toEqual({
        event: 'exception',
        data: {
          status: 'error',
          ...conflictBody('1'),
          cause: { pattern: 'order.edit', data: { id: '1' } },
        },
      });
    });
    expect(await client.request('order.edit', { id: '1' })).toEqual({
      event: 'reply',
      data: { edited: '1' },
    });
  });

  it('sends a call within a holdFor window an exception event with LOCK_THROTTLED and the time left', async () => {
    expect(await client.request('order.submit', { id: '2' })).toEqual({
      event: 'reply',
      data: { submitted: '2' },
    });
    const received = await client.request('order.submit', { id: '2' });
    expect(received).toEqual({
      event: 'exception',
      data: {
        status: 'error',
        ...throttleBody('2'),
        cause: { pattern: 'order.submit', data: { id: '2' } },
      },
    });
    withinWindow((received.data as { retryAfterMs: number }).retryAfterMs);
  });

  // Last: the app takes no more locks.
  it('sends an exception event with LOCK_SHUTTING_DOWN once shutdown has begun', async () => {
    await beginShutdown(module);
    expect(await client.request('order.edit', { id: '3' })).toEqual({
      event: 'exception',
      data: {
        status: 'error',
        ...shuttingDownBody('3'),
        cause: { pattern: 'order.edit', data: { id: '3' } },
      },
    });
  });
});
