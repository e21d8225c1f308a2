import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { sharedRedisUrl } from '../support/lock-app.js';

const APP = fileURLToPath(new URL('../support/failed-boot-app.mjs', import.meta.url));
/** Far longer than an exit takes; only a process that something keeps alive reaches it. */
const EXIT_BOUND = 15_000;

/**
 * Runs the app whose boot fails in a child process; resolves with what it printed and whether
 * it exited by itself (it is killed if it has not within {@link EXIT_BOUND}).
 */
async function bootAndFail(failure: string): Promise<{ output: string; exited: boolean }> {
  const child = spawn(process.execPath, [APP, failure], {
    env: { ...process.env, FAILED_BOOT_REDIS_URL: sharedRedisUrl() },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let timer: NodeJS.Timeout | undefined;
  const exited = await Promise.race([
    once(child, 'exit').then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), EXIT_BOUND))),
  ]);
  clearTimeout(timer);
  if (!exited) {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  return { output: output.trim(), exited };
}

/**
 * A boot that fails leaves nothing of the module open: a script that catches the boot error
 * exits by itself, whichever boot step failed. Needs the built library (`npm run build`).
 */
describe('a failed boot', () => {
  it.each([
    ['a @WithLock placeholder that names no parameter', 'placeholder', /LockKeyResolutionError/],
    ['a provider factory that throws', 'provider', /a provider factory failed/],
    ["another provider's onModuleInit", 'init', /an init hook failed/],
    ["another provider's onApplicationBootstrap", 'bootstrap', /a bootstrap hook failed/],
  ])(
    'leaves no connection open when it fails on %s',
    async (_, failure, error) => {
      const { output, exited } = await bootAndFail(failure);
      expect(output).toMatch(error);
      expect(exited).toBe(true);
    },
    30_000,
  );
});
