import { jest } from '@jest/globals';

/*
 * The all tier's specs drive clusters, JVMs and fleets of processes through faults on a small
 * machine, where a timing that holds a thousand times can miss once. Each test there gets one
 * more try; its first failure is printed before the retry, and test/support/retried-reporter.js
 * names every test that needed it at the end of the run. A test that fails twice fails the run.
 */
jest.retryTimes(1, { logErrorsBeforeRetry: true });
