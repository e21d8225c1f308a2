// `npm run test:all`: the specs the quick tier leaves out (jest.all.config.js), then, on a full
// run, 10,000 seeds of the simulation (`npm run simulate`, seeds 201 on: the quick tier runs the
// first 200), the simulation's mutants (`npm run simulate:mutants`: each must be caught) and
// the packed tarball in real apps (`npm run test:compat`). Arguments go to Jest, as with
// `npm test`: `npm run test:all -- test/zookeeper` (or `-t name`) runs those specs alone,
// without the tarball; a flag alone (`--ci`) keeps the run full.
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const jest = spawnSync(
  process.execPath,
  [
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
    'node_modules/jest/bin/jest.js',
    '-c',
    'jest.all.config.js',
    ...args,
  ],
  { stdio: 'inherit' },
);
const narrowed = args.some(
  (arg) => !arg.startsWith('-') || /^(-t|--testNamePattern|--testPathPattern)/.test(arg),
);
if (jest.status !== 0 || narrowed) process.exit(jest.status ?? 1);

const simulate = spawnSync(
  process.execPath,
  [
    '--no-warnings=ExperimentalWarning',
    'scripts/simulate.mjs',
    '--seeds',
    '10000',
    '--from',
    '201',
  ],
  { stdio: 'inherit' },
);
if (simulate.status !== 0) process.exit(simulate.status ?? 1);
const mutants = spawnSync(process.execPath, ['scripts/mutants.mjs'], { stdio: 'inherit' });
if (mutants.status !== 0) process.exit(mutants.status ?? 1);

const compat = spawnSync('npm', ['run', 'test:compat'], {
  stdio: 'inherit',
  shell: process.platform === 'win32',
});
process.exit(compat.status ?? 1);
