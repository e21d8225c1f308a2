// Installs the project's dependencies when they are missing or older than the lock file, so
// that `npm test` and `npm run demo` work as the first commands on a fresh clone.
//
// Only `npm ci`: it installs exactly what package-lock.json pins and never writes a tracked
// file. The lock file lists every platform's optional binaries, so `npm ci` works on Linux,
// macOS and Windows alike; if it fails, the lock file is wrong and must be fixed, not rewritten
// behind the user's back by an `npm install` fallback.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const installed = 'node_modules/.package-lock.json';
const upToDate =
  existsSync(installed) && statSync(installed).mtimeMs >= statSync('package-lock.json').mtimeMs;

if (!upToDate) {
  console.log('Installing dependencies (first run): npm ci');
  const ci = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  if (ci.status !== 0) {
    console.error(
      'npm ci failed. If it says package.json and package-lock.json are out of sync, run ' +
        '`npm install --package-lock-only` and commit the lock file (see CONTRIBUTING.md).',
    );
    process.exit(ci.status ?? 1);
  }
}
