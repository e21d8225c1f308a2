import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const APP = fileURLToPath(new URL('../support/no-telemetry-app.mjs', import.meta.url));
const HIDE_API = fileURLToPath(new URL('../support/hide-opentelemetry-api.mjs', import.meta.url));

/** An app without @opentelemetry/api installed (the package is an optional peer). */
describe('Without @opentelemetry/api', () => {
  it('boots and locks as usual, having looked for the API once, and says nothing of it', async () => {
    const child = fork(APP, { execArgv: ['--import', HIDE_API], stdio: 'inherit' });
    const [report] = (await once(child, 'message')) as [
      { fencingTokens: number[]; busy: unknown; lookups: number; warnings: string[] },
    ];
    await once(child, 'exit');
    expect(report.busy).toBeNull();
    expect(report.fencingTokens[1]).toBeGreaterThan(report.fencingTokens[0]);
    // Two modules booted, one look: the answer is kept for the process.
    expect(report.lookups).toBe(1);
    expect(report.warnings).toEqual([]);
  });
});
