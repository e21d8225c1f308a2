import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  runEdit,
  runLottery,
  runThrottle,
  SampleClient,
  type Check,
} from '../../sample/demo/scenarios.js';
import { AppModule, type AppOptions } from '../../sample/src/app.module.js';
import { sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

const failed = (checks: Check[]) => checks.filter((check) => !check.passed);

describe.each([
  ['on Redis', () => ({ redisUrl: sharedRedisUrl(), keyPrefix: uniquePrefix() })],
  ['on the in-memory store', () => ({})],
])('The sample app %s passes the demo scenarios', (_, options: () => AppOptions) => {
  const runId = randomUUID().slice(0, 8);
  let app: INestApplication<Server>;
  let client: SampleClient;
  let baseUrl: string;

  beforeAll(async () => {
    const module = await Test.createTestingModule({
      imports: [AppModule.forRoot(options())],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
    client = new SampleClient(baseUrl);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('answers /health with the lock store up', async () => {
    const response = await fetch(`${baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok', info: { lock: { status: 'up' } } });
  });

  it('lets one of 20 concurrent draws spend the only point, where unlocked draws overspend', async () => {
    const lottery = await runLottery(client, runId, 20);
    expect(failed(lottery.checks)).toEqual([]);
    // Without this the locked result would prove nothing: the draws must really overlap.
    expect(lottery.unsafe.prizes).toBeGreaterThan(1);
    expect(lottery.unsafe.balance).toBe(1 - lottery.unsafe.prizes);
  });

  it('accepts one of 10 concurrent submissions and answers the others 429 with Retry-After', async () => {
    const throttle = await runThrottle(client, runId, 10);
    expect(failed(throttle.checks)).toEqual([]);
    expect(throttle.retryAfter.every((s) => s >= 1 && s <= 5)).toBe(true);
  });

  it('keeps a slow edit locked past twice its TTL and answers concurrent edits 409', async () => {
    const edit = await runEdit(client, `p-${runId}`, 2_500, [200, 2_100]);
    expect(failed(edit.checks)).toEqual([]);
    expect(edit.probes.map((p) => p.status)).toEqual([409, 409]);
  });
});
