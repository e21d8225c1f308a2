/**
 * `npm run safety`: the full-size run of the multi-process safety checker (issue 6). Starts its
 * own redis-server, runs the workers and the nemesis for a few minutes, prints the summary, and
 * exits non-zero on any violation. Needs the built library (`npm run build`).
 *
 * Options: --workers N (default 8), --duration S (default 150), --ttl MS (default 400),
 * --unfenced-reads (the resource fences writes only, as `writeFenced` does), --json,
 * --faults a,b,c (the faults to cycle through; default: all of the mode's). The single-Redis
 * mode's faults are kill, stop, restart (aimed at the holder) and lag, kill-waiter, short-ttl
 * (aimed at the waiters of the fair handover), with --lag MIN-MAX (ms, default 1000-3000).
 * --redlock runs the RedLock mode instead: the checker starts --masters N redis-servers
 * (default 5) and stops them at the end, the workers use them with --node-timeout MS (default
 * 100), and the faults are kill, stop and restarts of a minority and of a majority of them.
 */
import { parseArgs } from 'node:util';
import { SafetyChecker } from '../test/safety/checker/checker.mjs';
import { formatSummary } from '../test/safety/checker/analyze.mjs';
import { assertRedisServerInstalled, RedisServer } from '../test/support/redis-server.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '8' },
    duration: { type: 'string', default: '150' },
    ttl: { type: 'string', default: '400' },
    'unfenced-reads': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    redlock: { type: 'boolean', default: false },
    masters: { type: 'string', default: '5' },
    'node-timeout': { type: 'string', default: '100' },
    faults: { type: 'string' },
    lag: { type: 'string', default: '1000-3000' },
  },
});
const [lagMin, lagMax] = values.lag.split('-').map(Number);

assertRedisServerInstalled();
// The RedLock mode's masters are the checker's own; the single-Redis mode's server is ours.
const redis = values.redlock ? undefined : await RedisServer.start();
let exitCode = 1;
try {
  const checker = new SafetyChecker({
    ...(redis
      ? { redis }
      : {
          redlock: { masters: Number(values.masters), nodeTimeout: Number(values['node-timeout']) },
        }),
    workers: Number(values.workers),
    ttl: Number(values.ttl),
    durationMs: Number(values.duration) * 1000,
    gapMs: 1_000,
    tailMs: 1_000,
    fenceReads: !values['unfenced-reads'],
    ...(values.faults
      ? {
          faults: /** @type {import('../test/safety/checker/checker.mjs').FaultKind[]} */ (
            values.faults.split(',')
          ),
        }
      : {}),
    lagMs: [lagMin, lagMax],
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`),
  });
  const result = await checker.run();
  console.log(formatSummary(result));
  if (values.json) console.log(JSON.stringify(result, null, 2));
  exitCode = result.ok ? 0 : 1;
} finally {
  await redis?.stop();
}
process.exitCode = exitCode;
