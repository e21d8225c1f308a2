/**
 * `npm run bench:several-keys`: what a caller of several keys costs the callers of one of them,
 * under two ways of waiting, in one run on one Redis.
 *
 * - **hold**: this library's `acquire([a, b])`: the keys in the order of their full keys, each
 *   waited for in turn while the earlier ones are held (deadlock-free by the order).
 * - **release and retry**, built here on the public API as Redisson's `MultiLock` and
 *   redis-semaphore's multi-locks would have it: wait for one key alone, then only try the
 *   others; when one is taken, give back what is held and wait for that one alone. Nothing is
 *   held while waiting.
 *
 * The workload, for `roundMs`: `aWorkers` callers loop on key `a` (short sections), `bWorkers`
 * on key `b` (long sections), and `pairWorkers` on both keys (short sections), each pair call
 * given `pairWaitMs`. Reports each group's sections/s and waits (p50, p99, max), and how many
 * pair calls gave up. Policies take turns round by round; all rounds are pooled.
 *
 * Progress goes to stderr, a markdown table to stdout, the figures to
 * bench/results/several-keys.json. `BENCH_QUICK=1` shrinks the run.
 */
import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { LockNotAcquiredError, type Lock, type LockService } from 'nestjs-redis-lock';
import { ThisLibraryAdapter } from './adapters/this-library.js';
import { CONFIG } from './config.js';
import { startRedis } from './redis/server.js';
import { max, now, percentile, round, sleep } from './stats.js';

const RESULTS_FILE = fileURLToPath(
  new URL('../../bench/results/several-keys.json', import.meta.url),
);

const SIZES = {
  aWorkers: 6,
  bWorkers: 2,
  pairWorkers: 2,
  aWorkMs: 2,
  bWorkMs: 40,
  pairWorkMs: 2,
  pairWaitMs: 3_000,
  roundMs: CONFIG.quick ? 2_000 : 6_000,
  rounds: CONFIG.quick ? 1 : 3,
};

type Policy = 'hold' | 'release and retry';
type Group = 'a' | 'b' | 'pair';

/** Takes every one of `keys` (sorted, distinct) by `policy` within `waitMs`; null if not. */
async function takeAll(
  locks: LockService,
  keys: readonly string[],
  policy: Policy,
  waitMs: number,
): Promise<(() => Promise<unknown>) | null> {
  if (policy === 'hold') {
    const pair = await locks.acquire(keys, { waitTimeout: waitMs }).catch(refusedAsNull);
    return pair && (() => pair.release());
  }
  const deadline = now() + waitMs;
  let blocker = 0;
  for (;;) {
    const left = Math.floor(deadline - now());
    if (left <= 0) return null;
    const first = await locks.acquire(keys[blocker], { waitTimeout: left }).catch(refusedAsNull);
    if (!first) return null;
    const held: Lock[] = [first];
    let taken = true;
    for (let i = 0; i < keys.length && taken; i++) {
      if (i === blocker) continue;
      const next = await locks.tryAcquire(keys[i]);
      if (next) held.push(next);
      else [taken, blocker] = [false, i];
    }
    if (taken) return () => Promise.all(held.map((lock) => lock.release()));
    await Promise.all(held.map((lock) => lock.release()));
  }
}

function refusedAsNull(error: unknown): null {
  if (error instanceof LockNotAcquiredError) return null;
  throw error;
}

interface Tally {
  waits: Record<Group, number[]>;
  gaveUp: number;
}

async function round1(locks: LockService, policy: Policy, prefix: string, tally: Tally) {
  const [a, b] = [`${prefix}:a`, `${prefix}:b`];
  const until = now() + SIZES.roundMs;
  const loop = async (group: Group, keys: string[], workMs: number) => {
    while (now() < until) {
      const asked = now();
      const release =
        keys.length === 1
          ? await locks
              .acquire(keys[0], { waitTimeout: SIZES.pairWaitMs })
              .then((lock) => () => lock.release(), refusedAsNull)
          : await takeAll(locks, keys, policy, SIZES.pairWaitMs);
      if (!release) {
        tally.gaveUp++;
        continue;
      }
      tally.waits[group].push(now() - asked);
      await sleep(workMs);
      await release();
    }
  };
  const workers = (n: number, run: () => Promise<void>) => Array.from({ length: n }, run);
  await Promise.all([
    ...workers(SIZES.aWorkers, () => loop('a', [a], SIZES.aWorkMs)),
    ...workers(SIZES.bWorkers, () => loop('b', [b], SIZES.bWorkMs)),
    ...workers(SIZES.pairWorkers, () => loop('pair', [a, b].sort(), SIZES.pairWorkMs)),
  ]);
}

async function main(): Promise<void> {
  const progress = (message: string) => process.stderr.write(`${message}\n`);
  const redis = await startRedis();
  const library = await ThisLibraryAdapter.create(redis.url);
  const policies: Policy[] = ['hold', 'release and retry'];
  const tallies = new Map<Policy, Tally>(
    policies.map((p) => [p, { waits: { a: [], b: [], pair: [] }, gaveUp: 0 }]),
  );
  try {
    for (let r = 0; r < SIZES.rounds; r++) {
      for (const policy of policies) {
        progress(`Round ${r + 1}/${SIZES.rounds}: ${policy}`);
        await round1(library.locks, policy, `keys:${r}:${policy.length}`, tallies.get(policy)!);
      }
    }
    const seconds = (SIZES.roundMs * SIZES.rounds) / 1000;
    const results = policies.map((policy) => {
      const { waits, gaveUp } = tallies.get(policy)!;
      const group = (g: Group) => ({
        sectionsPerSec: round(waits[g].length / seconds, 1),
        waitP50Ms: round(percentile(waits[g], 50)),
        waitP99Ms: round(percentile(waits[g], 99)),
        waitMaxMs: round(max(waits[g])),
      });
      return { policy, a: group('a'), b: group('b'), pair: group('pair'), pairsGaveUp: gaveUp };
    });
    const cell = (g: { sectionsPerSec: number; waitP50Ms: number; waitP99Ms: number }) =>
      `${g.sectionsPerSec}/s, wait ${g.waitP50Ms} / ${g.waitP99Ms} ms`;
    const lines = [
      `Several keys: ${SIZES.aWorkers} callers on a (${SIZES.aWorkMs} ms sections), ` +
        `${SIZES.bWorkers} on b (${SIZES.bWorkMs} ms), ${SIZES.pairWorkers} on both ` +
        `(${SIZES.pairWorkMs} ms, ${SIZES.pairWaitMs} ms wait); ${SIZES.rounds} rounds of ` +
        `${SIZES.roundMs} ms each`,
      '',
      '| waiting | callers of a | callers of b | callers of both | gave up |',
      '| --- | --- | --- | --- | ---: |',
      ...results.map(
        (r) => `| ${r.policy} | ${cell(r.a)} | ${cell(r.b)} | ${cell(r.pair)} | ${r.pairsGaveUp} |`,
      ),
      '',
      '(sections per second; wait p50 / p99)',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    await mkdir(fileURLToPath(new URL('.', `file://${RESULTS_FILE}`)), { recursive: true });
    await writeFile(
      RESULTS_FILE,
      JSON.stringify({ startedAt: new Date().toISOString(), sizes: SIZES, results }, null, 2) +
        '\n',
    );
  } finally {
    await library.close();
    await redis.stop();
  }
}

await main();
