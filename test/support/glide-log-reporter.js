import { cpSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Keeps GLIDE's log of a run that failed (test/support/glide-log.js sends it to a file), and
 * says where; the log of a run that passed goes with the run's folder.
 */
export default class GlideLogReporter {
  /** @param {unknown} _globalConfig @param {unknown} _options */
  constructor(_globalConfig, _options) {}

  /**
   * @param {unknown} _contexts
   * @param {{ numFailedTests: number, numRuntimeErrorTestSuites: number }} results
   */
  onRunComplete(_contexts, results) {
    const dir = process.env.GLIDE_LOG_DIR;
    if (!dir || !existsSync(dir) || readdirSync(dir).length === 0) return;
    if (results.numFailedTests === 0 && results.numRuntimeErrorTestSuites === 0) return;
    const kept = mkdtempSync(join(tmpdir(), 'lock-tests-glide-log-'));
    cpSync(dir, kept, { recursive: true });
    console.error(`GLIDE's log of this run (its warnings, kept off the console): ${kept}`);
  }
}
