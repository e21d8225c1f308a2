import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
} from '../../src/index.js';
import { answerGraphQL } from '../../src/transports/graphql.js';
import { bodyOf } from '../../src/transports/lock-error-body.js';

/** What every transport builds its answer from, and what GraphQL makes of it. */
describe('the answer to a refused lock call', () => {
  it('tells a store outage apart: 503, LOCK_STORE_UNAVAILABLE, retry after a second', () => {
    const error = new LockConnectionError('order:1', 'connect ECONNREFUSED 10.0.0.7:6379');
    expect(bodyOf(error)).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'LOCK_STORE_UNAVAILABLE',
      message: 'Lock "order:1": the lock store is unavailable, try again',
      retryAfterMs: 1_000,
    });
    const answered = answerGraphQL(error, bodyOf(error));
    expect(answered).toBeInstanceOf(LockConnectionError);
    expect(answered).toMatchObject({
      name: 'LockConnectionError',
      message: 'Lock "order:1": the lock store is unavailable, try again',
      extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterMs: 1_000 },
    });
  });

  it('keeps a conflict, a throttle and a shutdown as they were', () => {
    expect(bodyOf(new LockNotAcquiredError('a', 0))).toMatchObject({
      statusCode: 409,
      code: 'LOCK_CONFLICT',
    });
    expect(bodyOf(new LockNotAcquiredError('a', 0, 900, true, 900))).toMatchObject({
      statusCode: 429,
      code: 'LOCK_THROTTLED',
      retryAfterMs: 900,
    });
    expect(bodyOf(new LockShuttingDownError('a'))).toMatchObject({
      statusCode: 503,
      code: 'LOCK_SHUTTING_DOWN',
    });
  });
});
