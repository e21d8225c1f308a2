/**
 * `npm run simulate:mutants`: checks that the simulation catches each defect this protocol once
 * had. Every `test/simulation/mutants/*.patch` puts one back: it is applied to a copy of the
 * sources (src/, the simulation and its scripts, beside this checkout's node_modules), 1,000
 * seeds run on the copy, and at least one must fail; the first failing seed is then replayed
 * alone and must fail again. Prints, per mutant, how many seeds failed and which invariants
 * they broke; exits 1 if any mutant got through. Options: --seeds N (default 1000), and mutant
 * names to check only those.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(import.meta.dirname, '..');
const folder = join(root, 'test/simulation/mutants');
const { values, positionals } = parseArgs({
  options: { seeds: { type: 'string', default: '1000' } },
  allowPositionals: true,
});
const patches = readdirSync(folder)
  .filter((name) => name.endsWith('.patch'))
  .filter((name) => positionals.length === 0 || positionals.includes(basename(name, '.patch')));

/**
 * Runs the simulation in `dir` with `args`: its exit status and what it printed.
 * @param {string} dir
 * @param {string[]} args
 */
function simulate(dir, args) {
  const run = spawnSync(
    process.execPath,
    ['--no-warnings=ExperimentalWarning', 'scripts/simulate.mjs', ...args],
    { cwd: dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

let escaped = 0;
for (const patch of patches) {
  const name = basename(patch, '.patch');
  const dir = mkdtempSync(join(tmpdir(), `mutant-${name}-`));
  try {
    for (const path of ['src', 'test/simulation', 'scripts', 'package.json', 'tsconfig.json']) {
      cpSync(join(root, path), join(dir, path), { recursive: true });
    }
    // Read only: the copy runs on this checkout's packages, and installs nothing.
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const applied = spawnSync('patch', ['-p1', '--quiet', '-i', join(folder, patch)], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (applied.status !== 0) {
      console.log(`${name}: the patch does not apply\n${applied.stdout}${applied.stderr}`);
      escaped++;
      continue;
    }
    const run = simulate(dir, ['--seeds', values.seeds]);
    const failures = [...run.output.matchAll(/^seed (\d+) broke (.+?) at [\d.]+ ms:/gm)];
    if (failures.length === 0) {
      console.log(`${name}: NOT CAUGHT (${values.seeds} seeds passed; status ${run.status})`);
      escaped++;
      continue;
    }
    const [, seed] = failures[0];
    const replay = simulate(dir, ['--seed', seed]);
    const replayed = replay.status === 1 && /^seed \d+ broke /m.test(replay.output);
    const broken = [...new Set(failures.map(([, , invariant]) => invariant))].sort();
    console.log(
      `${name}: caught by ${failures.length}/${values.seeds} seeds (${broken.join(', ')}); ` +
        `seed ${seed} replayed ${replayed ? 'fails again' : 'does NOT fail again'}`,
    );
    if (!replayed) escaped++;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (patches.length === 0) {
  console.log(`no mutants in ${folder}`);
  escaped++;
}
process.exit(escaped > 0 ? 1 : 0);
