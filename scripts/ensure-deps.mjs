// Installs the project's dependencies when they are missing or older than the lock file, so
// that `npm test` and `npm run demo` work as the first commands on a fresh clone.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const installed = 'node_modules/.package-lock.json';
const upToDate =
  existsSync(installed) && statSync(installed).mtimeMs >= statSync('package-lock.json').mtimeMs;

if (!upToDate) {
  console.log('Installing dependencies (first run)…');
  const npm = (/** @type {string[]} */ args) =>
    spawnSync('npm', args, { stdio: 'inherit', shell: process.platform === 'win32' });
  // npm 11 can refuse its own lock file over platform-specific optional packages; `npm install`
  // from the same lock file still pins everything else.
  if (npm(['ci', '--no-audit', '--no-fund']).status !== 0) {
    const fallback = npm(['install', '--no-audit', '--no-fund']);
    if (fallback.status !== 0) process.exit(fallback.status ?? 1);
  }
}
