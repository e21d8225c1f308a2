import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayedError, QueueEvents, type Job, type Queue } from 'bullmq';
import { LockModule, LockNotAcquiredError, LockService } from '../../src/index.js';
import { sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

const QUEUE = 'orders';
/** How long a job whose order is locked waits before BullMQ runs it again, in ms. */
const RETRY_DELAY = 200;

/** What the apps' workers did: shared by the two apps, as they run in this one test process. */
const seen = { inside: 0, maxInside: 0, delayed: 0, shipped: [] as string[] };

/** The recipe of the README: a job whose key is held goes back to BullMQ's delayed set. */
@Processor(QUEUE, { concurrency: 4 })
@Injectable()
class OrdersProcessor extends WorkerHost {
  constructor(private readonly locks: LockService) {
    super();
  }

  async process(job: Job<{ orderId: string }>, token?: string): Promise<void> {
    try {
      await this.locks.using(`order:${job.data.orderId}`, () => this.ship(job), { waitTimeout: 0 });
    } catch (error) {
      if (!(error instanceof LockNotAcquiredError)) throw error;
      seen.delayed++;
      await job.moveToDelayed(Date.now() + (error.retryAfterMs ?? RETRY_DELAY), token);
      // Tells the worker the job was moved, not failed: no attempt is spent.
      throw new DelayedError();
    }
  }

  /** Work that must not overlap for one order: a read-modify-write, say. */
  private async ship(job: Job<{ orderId: string }>): Promise<void> {
    seen.inside++;
    seen.maxInside = Math.max(seen.maxInside, seen.inside);
    await sleep(150);
    seen.shipped.push(job.id ?? '');
    seen.inside--;
  }
}

@Injectable()
class Orders {
  constructor(@InjectQueue(QUEUE) readonly queue: Queue) {}
}

/** One instance of the app: its own LockModule, BullMQ connections and workers. */
async function bootInstance(connection: { host: string; port: number }, prefix: string) {
  const module = await Test.createTestingModule({
    imports: [
      LockModule.forRoot({ redis: sharedRedisUrl(), keyPrefix: `${prefix}lock:` }),
      BullModule.forRoot({ connection, prefix: `${prefix}bull` }),
      BullModule.registerQueue({ name: QUEUE }),
    ],
    providers: [OrdersProcessor, Orders],
  }).compile();
  await module.init();
  return module;
}

describe('a BullMQ processor whose job finds its key held (@nestjs/bullmq)', () => {
  const { hostname, port } = new URL(sharedRedisUrl());
  const connection = { host: hostname, port: Number(port) };
  const prefix = uniquePrefix();
  let instances: TestingModule[];
  let events: QueueEvents;

  beforeAll(async () => {
    instances = [await bootInstance(connection, prefix), await bootInstance(connection, prefix)];
    events = new QueueEvents(QUEUE, { connection, prefix: `${prefix}bull` });
    await events.waitUntilReady();
  });

  afterAll(async () => {
    await events.close();
    const { queue } = instances[0].get(Orders);
    await queue.obliterate({ force: true });
    await Promise.all(instances.map((instance) => instance.close()));
  });

  it('is delayed by BullMQ and runs later, never failed and never beside the holder', async () => {
    const { queue } = instances[0].get(Orders);
    const jobs = await queue.addBulk(
      Array.from({ length: 6 }, () => ({ name: 'ship', data: { orderId: '42' } })),
    );
    await Promise.all(jobs.map((job) => job.waitUntilFinished(events, 30_000)));

    expect(seen.maxInside).toBe(1);
    expect(seen.shipped.sort()).toEqual(jobs.map((job) => job.id).sort());
    expect(seen.delayed).toBeGreaterThan(0);
    const finished = await Promise.all(jobs.map((job) => queue.getJob(job.id ?? '')));
    for (const job of finished) {
      expect(job?.failedReason).toBeFalsy();
      // The run that shipped it is its one attempt: being delayed spent none.
      expect(job?.attemptsMade).toBe(1);
    }
    const started = finished.reduce((sum, job) => sum + (job?.attemptsStarted ?? 0), 0);
    expect(started).toBe(jobs.length + seen.delayed);
    expect(await queue.getFailedCount()).toBe(0);
  });
});
