import { relative } from 'node:path';

/**
 * Names, at the end of a run, every test that passed only on its second try (see
 * test/support/retry-once.js), with the first line of why its first try failed: a test that
 * needs the retry again and again has a timing to fix.
 */
export default class RetriedReporter {
  /** @type {string[]} */
  retried = [];

  /** @param {unknown} _globalConfig @param {unknown} _options */
  constructor(_globalConfig, _options) {}

  /**
   * @param {unknown} _test
   * @param {{ testFilePath: string, testResults: Array<{ fullName: string, status: string,
   *   invocations?: number, retryReasons?: string[] }> }} result
   */
  onTestResult(_test, result) {
    for (const test of result.testResults) {
      if ((test.invocations ?? 1) < 2 || test.status !== 'passed') continue;
      const reason = (test.retryReasons?.[0] ?? '').split('\n').find((line) => line.trim());
      this.retried.push(
        `  ${relative(process.cwd(), result.testFilePath)} › ${test.fullName}\n    first try: ${reason}`,
      );
    }
  }

  onRunComplete() {
    if (this.retried.length === 0) return;
    console.error(
      `${this.retried.length} test(s) passed only on their second try:\n${this.retried.join('\n')}`,
    );
  }
}
