/**
 * The demo's scenarios: fire concurrent requests at a running sample app and check what the
 * locks made of them. Shared by `demo.ts` and the sample's Jest test.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

/** One verdict on the app's behaviour. */
export interface Check {
  name: string;
  passed: boolean;
  /** What was observed. */
  detail: string;
}

export interface ScenarioOptions {
  /** Where the app listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Makes this run's user ids unique, so that runs can share a persistent Redis. */
  runId?: string;
  /** Concurrent draws per lottery variant. Default 20. */
  draws?: number;
  /** Concurrent submissions. Default 10. */
  submissions?: number;
  /** Product of the slow edit. Default `'123'`. */
  productId?: string;
  /** How long the slow edit works. Default 3500 ms. */
  editDurationMs?: number;
  /**
   * When a concurrent edit tries, in ms after the slow edit was sent. Default: 250 ms after,
   * and 500 ms before the slow edit ends.
   */
  conflictProbesAtMs?: number[];
}

/** Runs one step of a scenario; the demo shows progress with it. */
export type Step = <T>(label: string, work: () => Promise<T>) => Promise<T>;

export interface DrawTally {
  prizes: number;
  balance: number;
  /** How many requests got each HTTP status. */
  statuses: Record<number, number>;
}

export interface LotteryOutcome {
  draws: number;
  unsafe: DrawTally;
  locked: DrawTally;
  checks: Check[];
}

export interface ThrottleOutcome {
  submissions: number;
  accepted: number;
  throttled: number;
  /** Distinct `Retry-After` values (s) of the 429s. */
  retryAfter: number[];
  /** Submissions the app stored. */
  stored: number;
  statuses: Record<number, number>;
  checks: Check[];
}

export interface EditOutcome {
  productId: string;
  durationMs: number;
  status: number;
  ttl: number;
  heldMs: number;
  fencingToken: number;
  probes: { atMs: number; status: number }[];
  /** The edit sent once the slow one ended: its status and fencing token. */
  next: { status: number; fencingToken: number };
  checks: Check[];
}

export interface Outcomes {
  lottery: LotteryOutcome;
  throttle: ThrottleOutcome;
  edit: EditOutcome;
  /** Pids (`x-served-by`) of the processes that answered. */
  servedBy: string[];
  checks: Check[];
}

/** What `PUT /products/:id` answers with when the edit went through. */
interface EditReply {
  fencingToken?: number;
  heldMs?: number;
  ttl?: number;
}

interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** A minimal JSON client that notes which processes answered. */
export class SampleClient {
  readonly servedBy = new Set<string>();

  constructor(private readonly baseUrl: string) {}

  /** Sends a request; `T` is the shape the sample's route answers with (it is not checked). */
  async send<T = unknown>(method: string, path: string, body?: object): Promise<Reply<T>> {
    const response = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    const pid = response.headers.get('x-served-by');
    if (pid) this.servedBy.add(pid);
    return { status: response.status, headers: response.headers, body: parse(text) as T };
  }

  /** Like {@link send}, but fails unless the status is `expected`. */
  async expect<T = unknown>(
    expected: number,
    method: string,
    path: string,
    body?: object,
  ): Promise<T> {
    const reply = await this.send<T>(method, path, body);
    if (reply.status !== expected) {
      throw new Error(
        `${method} ${path} answered ${reply.status} (expected ${expected}): ${JSON.stringify(reply.body)}`,
      );
    }
    return reply.body;
  }
}

const direct: Step = (_label, work) => work();

/** Runs every scenario, one after the other. */
export async function runScenarios(
  options: ScenarioOptions,
  step: Step = direct,
): Promise<Outcomes> {
  const client = new SampleClient(options.baseUrl);
  const runId = options.runId ?? randomUUID().slice(0, 8);
  const lottery = await runLottery(client, runId, options.draws ?? 20, step);
  const throttle = await runThrottle(client, runId, options.submissions ?? 10, step);
  const durationMs = options.editDurationMs ?? 3_500;
  const edit = await runEdit(
    client,
    options.productId ?? '123',
    durationMs,
    options.conflictProbesAtMs ?? [250, Math.max(250, durationMs - 500)],
    step,
  );
  return {
    lottery,
    throttle,
    edit,
    servedBy: [...client.servedBy].sort(),
    checks: [...lottery.checks, ...throttle.checks, ...edit.checks],
  };
}

/**
 * The lottery: `draws` concurrent draws for a user with 1 point, first without a lock, then
 * with `@WithLock`. Only the locked variant is checked: how wrong the other goes depends on
 * timing.
 */
export async function runLottery(
  client: SampleClient,
  runId: string,
  draws: number,
  step: Step = direct,
): Promise<LotteryOutcome> {
  const drawAll = async (variant: 'draw-unsafe' | 'draw', userId: string): Promise<DrawTally> => {
    await client.expect(201, 'POST', `/lottery/${userId}/points`, { points: 1 });
    const replies = await Promise.all(
      Array.from({ length: draws }, () => client.send('POST', `/lottery/${userId}/${variant}`)),
    );
    const account = await client.expect<{ prizes: unknown[]; balance: number }>(
      200,
      'GET',
      `/lottery/${userId}`,
    );
    return {
      prizes: account.prizes.length,
      balance: account.balance,
      statuses: countStatuses(replies),
    };
  };
  const unsafe = await step(`Lottery: ${draws} concurrent draws without a lock`, () =>
    drawAll('draw-unsafe', `ann-${runId}`),
  );
  const locked = await step(`Lottery: ${draws} concurrent draws with @WithLock`, () =>
    drawAll('draw', `bob-${runId}`),
  );
  const refused = draws - (locked.statuses[200] ?? 0);
  const refusedProperly = (locked.statuses[409] ?? 0) + (locked.statuses[400] ?? 0);
  return {
    draws,
    unsafe,
    locked,
    checks: [
      check('locked lottery: exactly 1 prize', locked.prizes === 1, `${locked.prizes} prize(s)`),
      check('locked lottery: balance 0', locked.balance === 0, `balance ${locked.balance}`),
      check(
        'locked lottery: the other draws refused with 409 (or 400 once the point was spent)',
        refused === draws - 1 && refusedProperly === refused,
        `statuses ${formatStatuses(locked.statuses)}`,
      ),
    ],
  };
}

/**
 * The throttle: `submissions` concurrent submissions of one assignment by one user; it lets
 * one through and answers the others with 429 and `Retry-After`.
 */
export async function runThrottle(
  client: SampleClient,
  runId: string,
  submissions: number,
  step: Step = direct,
): Promise<ThrottleOutcome> {
  const userId = `cyd-${runId}`;
  const path = '/assignments/hw1/submissions';
  return step(`Throttle: ${submissions} concurrent submissions`, async () => {
    const replies = await Promise.all(
      Array.from({ length: submissions }, (_, i) =>
        client.send('POST', path, { userId, content: `attempt ${i + 1}` }),
      ),
    );
    const throttled = replies.filter((r) => r.status === 429);
    const retryAfter = throttled.map((r) => Number(r.headers.get('retry-after')));
    const distinctRetryAfter = [...new Set(retryAfter)].sort((a, b) => a - b);
    const stored = await client.expect<unknown[]>(
      200,
      'GET',
      `${path}?userId=${encodeURIComponent(userId)}`,
    );
    const accepted = replies.filter((r) => r.status === 201).length;
    const statuses = countStatuses(replies);
    return {
      submissions,
      accepted,
      throttled: throttled.length,
      retryAfter: distinctRetryAfter,
      stored: stored.length,
      statuses,
      checks: [
        check('throttle: exactly 1 submission accepted', accepted === 1, `${accepted} accepted`),
        check(
          'throttle: every other submission got 429 with Retry-After',
          throttled.length === submissions - 1 &&
            retryAfter.every((s) => Number.isInteger(s) && s >= 1),
          `statuses ${formatStatuses(statuses)}; Retry-After ${distinctRetryAfter.join('/') || 'none'}`,
        ),
        check(
          'throttle: exactly 1 submission stored',
          stored.length === 1,
          `${stored.length} stored`,
        ),
      ],
    };
  });
}

/**
 * The product editor: a slow edit whose lock has a shorter TTL than the edit takes, concurrent
 * edits while it runs, and one more edit after it ended.
 */
export async function runEdit(
  client: SampleClient,
  productId: string,
  durationMs: number,
  probesAtMs: number[],
  step: Step = direct,
): Promise<EditOutcome> {
  const path = `/products/${encodeURIComponent(productId)}`;
  const label = `Slow edit of product ${productId} (${seconds(durationMs)}) with concurrent edits`;
  const { slow, probes } = await step(label, async () => {
    const slow = client.send<EditReply>('PUT', path, { name: 'Desk lamp', durationMs });
    const probes = probesAtMs.map(async (atMs) => {
      await sleep(atMs);
      const reply = await client.send('PUT', path, { name: 'Desk lamp (rival)', durationMs: 0 });
      return { atMs, status: reply.status };
    });
    const [slowReply, probeReplies] = await Promise.all([slow, Promise.all(probes)]);
    return { slow: slowReply, probes: probeReplies };
  });
  const next = await step('Edit again once the slow edit ended', async () => {
    const reply = await client.send<EditReply>('PUT', path, {
      name: 'Desk lamp, v2',
      durationMs: 0,
    });
    return { status: reply.status, fencingToken: Number(reply.body?.fencingToken) };
  });
  const { ttl = NaN, heldMs = NaN, fencingToken = NaN } = slow.status === 200 ? slow.body : {};
  return {
    productId,
    durationMs,
    status: slow.status,
    ttl,
    heldMs,
    fencingToken,
    probes,
    next,
    checks: [
      check(
        'edit: the slow edit succeeded',
        slow.status === 200,
        `status ${slow.status}${slow.status === 200 ? '' : `: ${JSON.stringify(slow.body)}`}`,
      ),
      check(
        'edit: the lock lived more than twice its TTL',
        heldMs > 2 * ttl,
        `held ${heldMs} ms with a TTL of ${ttl} ms`,
      ),
      check(
        'edit: concurrent edits got 409',
        probes.every((p) => p.status === 409),
        probes.map((p) => `${p.status} at ${p.atMs} ms`).join(', '),
      ),
      check(
        'edit: the next edit got the lock, with a greater fencing token',
        next.status === 200 && next.fencingToken > fencingToken,
        `status ${next.status}, fencing token ${fencingToken} then ${next.fencingToken}`,
      ),
    ],
  };
}

function check(name: string, passed: boolean, detail: string): Check {
  return { name, passed, detail };
}

function countStatuses(replies: Reply[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of replies) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/** `{ 200: 1, 409: 19 }` as `1 × 200, 19 × 409`. */
export function formatStatuses(statuses: Record<number, number>): string {
  return Object.entries(statuses)
    .map(([status, count]) => `${count} × ${status}`)
    .join(', ');
}

/** 3500 as `3.5 s`. */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(2))} s`;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
