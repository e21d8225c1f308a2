import { parseArgs } from 'node:util';
import { runSeed } from './run-seed.js';

/**
 * `npm run simulate -- --seeds N [--from S]`: runs N seeds and prints how many a second; a
 * failing seed is named with the invariant it broke, and the run exits 1.
 * `npm run simulate -- --seed S`: replays one seed and prints its trace.
 */
const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '100' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
  },
});

if (values.seed !== undefined) {
  const result = await runSeed(Number(values.seed), true);
  process.stdout.write(`${result.trace.join('\n')}\n`);
  const { violation } = result;
  if (violation) {
    process.stdout.write(`seed ${result.seed} broke ${violation.invariant}: ${violation.detail}\n`);
    process.exitCode = 1;
  }
} else {
  const count = Number(values.seeds);
  const from = Number(values.from);
  const started = performance.now();
  let failed = 0;
  for (let seed = from; seed < from + count; seed++) {
    const { violation } = await runSeed(seed);
    if (!violation) continue;
    failed++;
    process.stdout.write(
      `seed ${seed} broke ${violation.invariant} at ${violation.at} ms: ${violation.detail}\n`,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(
    `${count - failed}/${count} seeds passed in ${seconds.toFixed(1)} s ` +
      `(${(count / seconds).toFixed(1)} seeds/s)\n`,
  );
  if (failed > 0) process.exitCode = 1;
}
