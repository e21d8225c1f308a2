/**
 * `npm run safety`: the full-size run of the multi-process safety checker (issue 6). Starts its
 * own redis-server, runs the workers and the nemesis for a few minutes, prints the summary, and
 * exits non-zero on any violation. Needs the built library (`npm run build`).
 *
 * Options: --workers N (default 8), --duration S (default 150), --ttl MS (default 400),
 * --unfenced-reads (the resource fences writes only, as `writeFenced` does), --json.
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
  },
});

assertRedisServerInstalled();
const redis = await RedisServer.start();
let exitCode = 1;
try {
  const checker = new SafetyChecker({
    redis,
    workers: Number(values.workers),
    ttl: Number(values.ttl),
    durationMs: Number(values.duration) * 1000,
    gapMs: 1_000,
    tailMs: 1_000,
    fenceReads: !values['unfenced-reads'],
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`),
  });
  const result = await checker.run();
  console.log(formatSummary(result));
  if (values.json) console.log(JSON.stringify(result, null, 2));
  exitCode = result.ok ? 0 : 1;
} finally {
  await redis.stop();
}
process.exitCode = exitCode;
