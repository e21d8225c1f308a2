import {
  Controller,
  Get,
  Injectable,
  Param,
  Post,
  SetMetadata,
  Sse,
  type INestApplication,
  type MessageEvent,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { interval, map, Observable, take } from 'rxjs';
import request from 'supertest';
import { LockModule, WithLock } from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';

const Audited = (label: string) => SetMetadata('audit', label);

@Injectable()
class Gate {
  open!: () => void;
  closed = new Promise<void>((resolve) => (this.open = resolve));
  reset() {
    this.closed = new Promise<void>((resolve) => (this.open = resolve));
  }
}

@Controller()
class ShopController {
  constructor(private readonly gate: Gate) {}

  @Post('products/:id/edit')
  @WithLock('product:<id>')
  @Audited('edit')
  async edit(@Param('id') id: string) {
    await this.gate.closed;
    return { edited: id };
  }

  @Audited('submit')
  @WithLock('submit:<userId>', { holdFor: 1_000 })
  @Post('users/:userId/submit')
  async submit(@Param('userId') userId: string) {
    return { submitted: userId };
  }

  @Get('reports/:id')
  @WithLock('report:<id>')
  report(@Param('id') id: string): Observable<string> {
    return interval(100).pipe(
      take(3),
      map((i) => `${id}-${i}`),
    );
  }

  @Sse('feed/:id')
  @WithLock('feed:<id>')
  feed(@Param('id') id: string): Observable<MessageEvent> {
    return interval(50).pipe(map((i) => ({ data: `${id}:${i}` })));
  }
}

describe.each(backends)('@WithLock on controller route handlers (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let app: INestApplication<Server>;
  let store: Backend;
  let gate: Gate;

  beforeAll(async () => {
    store = makeBackend();
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot(store.options({ keyPrefix: prefix }))],
      controllers: [ShopController],
      providers: [Gate],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    gate = app.get(Gate);
  });

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('answers a concurrent edit with 409 Conflict, without leaking the key prefix', async () => {
    gate.reset();
    const first = request(app.getHttpServer())
      .post('/products/123/edit')
      .then((r) => r);
    await sleep(100);
    const second = await request(app.getHttpServer()).post('/products/123/edit');
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(JSON.stringify(second.body)).not.toContain(prefix);
    gate.open();
    expect((await first).body).toEqual({ edited: '123' });
    expect(await store.exists(`${prefix}product:123`)).toBe(0);
  });

  it('answers a second submit within holdFor with 429 and Retry-After, and accepts after it', async () => {
    const server = app.getHttpServer();
    expect((await request(server).post('/users/7/submit')).status).toBe(201);
    const throttled = await request(server).post('/users/7/submit');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await sleep(1_100);
    expect((await request(server).post('/users/7/submit')).status).toBe(201);
  });

  it('keeps metadata of other decorators in either order', () => {
    const reflector = app.get(Reflector);
    // The methods are read as the targets of their metadata, never called.
    /* eslint-disable @typescript-eslint/unbound-method */
    const { edit, submit } = ShopController.prototype;
    /* eslint-enable @typescript-eslint/unbound-method */
    expect(reflector.get('audit', edit)).toBe('edit');
    expect(reflector.get('audit', submit)).toBe('submit');
    expect(Reflect.getMetadata('path', edit)).toBe('products/:id/edit');
    expect(Reflect.getMetadata('path', submit)).toBe('users/:userId/submit');
  });

  it('holds the lock of an Observable handler until the stream completes', async () => {
    const response = request(app.getHttpServer())
      .get('/reports/r1')
      .then((r) => r);
    await sleep(150);
    expect(await store.exists(`${prefix}report:r1`)).toBe(1);
    expect((await request(app.getHttpServer()).get('/reports/r1')).status).toBe(409);
    expect((await response).status).toBe(200);
    expect(await store.exists(`${prefix}report:r1`)).toBe(0);
  });

  it('releases the lock of an SSE stream when the client goes away', async () => {
    const { port } = app.getHttpServer().address() as AddressInfo;
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${port}/feed/f1`, { signal: controller.signal });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    try {
      while (!received.includes('f1:')) {
        const chunk = await reader.read();
        if (chunk.done) break;
        received += chunk.value;
      }
      expect(received).toContain('f1:');
      expect(await store.exists(`${prefix}feed:f1`)).toBe(1);
    } finally {
      controller.abort();
      await reader.cancel().catch(() => undefined);
    }
    for (let i = 0; i < 100 && (await store.exists(`${prefix}feed:f1`)) === 1; i++) await sleep(20);
    expect(await store.exists(`${prefix}feed:f1`)).toBe(0);
  });
});
