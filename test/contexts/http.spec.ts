import { Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Server } from 'node:http';
import request from 'supertest';
import { LockService, WithLock } from '../../src/index.js';
import { sleep } from '../support/lock-app.js';
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

@Injectable()
class Gate {
  open!: () => void;
  closed = new Promise<void>((resolve) => (this.open = resolve));
}

@Controller('orders/:id')
class OrdersController {
  constructor(private readonly gate: Gate) {}

  @Post('edit')
  @WithLock('order:<id>')
  edit(@Param('id') id: string) {
    return { edited: id };
  }

  @Post('submit')
  @WithLock('submit:<id>', { holdFor: SUBMIT_WINDOW_MS })
  submit(@Param('id') id: string) {
    return { submitted: id };
  }

  /** The key of the throttle, taken without holdFor: whether it is refused is the holder's say. */
  @Post('status')
  @WithLock('submit:<id>')
  status(@Param('id') id: string) {
    return { status: id };
  }

  /** A throttle whose call runs until the gate opens; its lock is renewed meanwhile. */
  @Post('slow-submit')
  @WithLock('submit:<id>', { holdFor: SUBMIT_WINDOW_MS })
  async slowSubmit(@Param('id') id: string) {
    await this.gate.closed;
    return { submitted: id };
  }
}

const platforms: [string, () => FastifyAdapter | undefined][] = [
  ['Express', () => undefined],
  ['Fastify', () => new FastifyAdapter()],
];

describe.each(platforms)('a held lock in an HTTP handler (%s)', (_, httpAdapter) => {
  let module: TestingModule;
  let app: INestApplication<Server>;

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [lockModule()],
      controllers: [OrdersController],
      providers: [Gate],
    }).compile();
    const adapter = httpAdapter();
    app = adapter
      ? module.createNestApplication(adapter, { logger: false })
      : module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  const post = (path: string) => request(app.getHttpServer()).post(path);

  it('answers 409 without a Retry-After: the holder may finish at any moment', async () => {
    await whileOrderHeld(module, '1', async () => {
      const response = await post('/orders/1/edit');
      expect(response.status).toBe(409);
      expect(response.headers['retry-after']).toBeUndefined();
      expect(response.body).toEqual(conflictBody('1'));
    });
    expect((await post('/orders/1/edit')).status).toBe(201);
  });

  it('answers 429 with a Retry-After of what is left of the holdFor window', async () => {
    expect((await post('/orders/2/submit')).status).toBe(201);
    const response = await post('/orders/2/submit');
    expect(response.status).toBe(429);
    expect(response.body).toEqual(throttleBody('2'));
    const { retryAfterMs } = response.body as { retryAfterMs: number };
    withinWindow(retryAfterMs);
    expect(response.headers['retry-after']).toBe(String(Math.ceil(retryAfterMs / 1000)));
  });

  it('says no more than the holdFor window while the call that opened it still runs', async () => {
    const first = post('/orders/3/slow-submit').then((r) => r);
    const locks = module.get(LockService);
    while (!(await locks.isLocked('submit:3'))) await sleep(10);
    const response = await post('/orders/3/submit');
    module.get(Gate).open();
    expect((await first).status).toBe(201);
    expect(response.status).toBe(429);
    expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(SUBMIT_WINDOW_MS / 1000);
    withinWindow((response.body as { retryAfterMs: number }).retryAfterMs);
  });

  it('answers 429 to a caller without holdFor inside the window, as the holder is a throttle', async () => {
    expect((await post('/orders/4/submit')).status).toBe(201);
    const response = await post('/orders/4/status');
    expect(response.status).toBe(429);
    expect(response.body).toEqual(throttleBody('4'));
    withinWindow((response.body as { retryAfterMs: number }).retryAfterMs);
    expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('answers 409 to a caller with holdFor when the holder has none: a plain conflict', async () => {
    const held = await module.get(LockService).acquire('submit:5');
    try {
      const response = await post('/orders/5/submit');
      expect(response.status).toBe(409);
      expect(response.headers['retry-after']).toBeUndefined();
      expect(response.body).toMatchObject({ statusCode: 409, code: 'LOCK_CONFLICT' });
    } finally {
      await held.release();
    }
    expect((await post('/orders/5/submit')).status).toBe(201);
  });

  // Last: the app takes no more locks.
  it('answers 503 with Connection: close once shutdown has begun: retry on another instance', async () => {
    await beginShutdown(module);
    const response = await post('/orders/4/edit').set('Connection', 'keep-alive');
    expect(response.status).toBe(503);
    expect(response.body).toEqual(shuttingDownBody('4'));
    expect(response.headers.connection).toBe('close');
    expect(response.headers['retry-after']).toBeUndefined();
  });
});
