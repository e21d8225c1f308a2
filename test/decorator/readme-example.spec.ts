import { Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import request from 'supertest';
import { LockModule, LockNotAcquiredError, WithLock } from '../../src/index.js';
import { sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

/** Lets a test keep a draw running while others come. */
let drawing: Promise<void> = Promise.resolve();

// The README's "decorator in ten lines", with a draw that lasts as long as the test says.
@Injectable()
class LotteryService {
  @WithLock('lottery:<userId>')
  async draw(userId: string) {
    await drawing;
    return { drawn: userId };
  }
}

@Controller('lottery')
class LotteryController {
  constructor(private readonly lottery: LotteryService) {}

  @Post(':userId/draw')
  @WithLock('lottery-route:<userId>', { holdFor: 5_000 })
  draw(@Param('userId') userId: string) {
    return this.lottery.draw(userId);
  }
}

/** What the README says of its first decorator example, on Redis. */
describe('the README’s decorator example', () => {
  let app: INestApplication<Server>;

  beforeAll(async () => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: sharedRedisUrl(), keyPrefix: uniquePrefix() })],
      controllers: [LotteryController],
      providers: [LotteryService],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  it('refuses a second draw of the service while one runs, as a conflict (409), not a throttle', async () => {
    let finish!: () => void;
    drawing = new Promise((resolve) => (finish = resolve));
    const lottery = app.get(LotteryService);
    const first = lottery.draw('u1');
    await sleep(50);
    const second = await lottery.draw('u1').catch((error: unknown) => error);
    expect(second).toBeInstanceOf(LockNotAcquiredError);
    expect(second).toMatchObject({ throttled: false, retryAfterMs: undefined });
    finish();
    expect(await first).toEqual({ drawn: 'u1' });
  });

  it('answers a request within the route’s 5 s with 429 and Retry-After, during the draw and after it', async () => {
    let finish!: () => void;
    drawing = new Promise((resolve) => (finish = resolve));
    const server = app.getHttpServer();
    const first = request(server)
      .post('/lottery/u2/draw')
      .then((response) => response);
    await sleep(100);
    const during = await request(server).post('/lottery/u2/draw');
    expect(during.status).toBe(429);
    expect(Number(during.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    finish();
    expect((await first).status).toBe(201);
    const after = await request(server).post('/lottery/u2/draw');
    expect(after.status).toBe(429);
    expect(Number(after.headers['retry-after'])).toBeLessThanOrEqual(5);
  });
});
