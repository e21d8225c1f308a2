import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { metrics } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  formatLockSummary,
  parsePrometheus,
  quantile,
  scrapeMetrics,
  summarizeLocks,
} from '../../sample/demo/metrics-summary.js';
import { runLottery, runThrottle, SampleClient } from '../../sample/demo/scenarios.js';
import { AppModule } from '../../sample/src/app.module.js';
import { sharedRedisUrl, uniquePrefix } from '../support/lock-app.js';

describe('The sample app’s GET /metrics', () => {
  const runId = randomUUID().slice(0, 8);
  let app: INestApplication<Server>;
  let baseUrl: string;
  let client: SampleClient;

  beforeAll(async () => {
    const options = { redisUrl: sharedRedisUrl(), keyPrefix: uniquePrefix() };
    const module = await Test.createTestingModule({
      imports: [AppModule.forRoot(options)],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
    client = new SampleClient(baseUrl);
  });

  afterAll(async () => {
    await app?.close();
    metrics.disable();
  });

  it('serves the locks’ metrics in the Prometheus text format, named by their templates', async () => {
    const lottery = await runLottery(client, runId, 10);
    const throttle = await runThrottle(client, runId, 6);

    const response = await fetch(`${baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(response.headers.get('x-served-by')).toBe(String(process.pid));
    const text = await response.text();
    expect(text).toContain('# TYPE lock_acquire_duration histogram');
    expect(text).toContain('# UNIT lock_acquire_duration s');
    expect(text).toContain('# TYPE lock_held gauge');
    const held = parsePrometheus(text).filter((s) => s.name === 'lock_held');
    expect(held.map((s) => s.labels)).toContainEqual(
      expect.objectContaining({
        lock_name: 'lottery:<userId>',
        lock_kind: 'mutex',
        lock_backend: 'redis',
      }),
    );
    expect(held.every((s) => s.value === 0)).toBe(true);
    // The keys themselves, with the user ids in them, are nowhere.
    expect(text).not.toContain(runId);

    const locks = summarizeLocks(await scrapeMetrics(baseUrl, 1));
    const draws = locks.find((lock) => lock.name === 'lottery:<userId>')!;
    expect(draws.outcomes.acquired).toBe(lottery.locked.statuses[200]);
    expect(draws.outcomes.busy).toBe(lottery.locked.statuses[409]);
    expect(draws.waitP99).toBeGreaterThan(0);
    const submissions = locks.find((lock) => lock.name === 'submit:<userId>:<assignmentId>')!;
    expect(submissions.outcomes).toEqual({ acquired: 1, throttled: throttle.throttled });
    const row = `lottery:<userId>\\s+${draws.outcomes.acquired}\\s+${draws.outcomes.busy}\\s+0\\s+0\\s`;
    expect(formatLockSummary(locks, 1)).toMatch(new RegExp(row));
  });

  it('estimates quantiles from the buckets as histogram_quantile does', () => {
    const buckets: [number, number][] = [
      [0.001, 0],
      [0.01, 50],
      [0.1, 100],
      [Infinity, 100],
    ];
    expect(quantile(0.5, buckets)).toBeCloseTo(0.01);
    expect(quantile(0.25, buckets)).toBeCloseTo(0.0055);
    expect(quantile(0.99, buckets)).toBeCloseTo(0.0982);
    expect(quantile(0.5, [[Infinity, 0]])).toBeUndefined();
  });
});
