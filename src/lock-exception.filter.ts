import { Catch, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LockNotAcquiredError } from './lock.errors.js';

/**
 * Answers HTTP requests that failed on a held lock: `409 Conflict`, or `429 Too Many Requests`
 * with `Retry-After` for a `holdFor` throttle. The body names the key without the module's
 * prefix. Other contexts (RPC, WebSockets) get the error as it is.
 */
@Catch(LockNotAcquiredError)
export class LockExceptionFilter implements ExceptionFilter<LockNotAcquiredError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockNotAcquiredError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    const status = error.throttled ? HttpStatus.TOO_MANY_REQUESTS : HttpStatus.CONFLICT;
    if (error.retryAfterMs !== undefined && error.retryAfterMs >= 0) {
      adapter.setHeader(
        response,
        'Retry-After',
        String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
      );
    }
    adapter.reply(
      response,
      {
        statusCode: status,
        error: error.throttled ? 'Too Many Requests' : 'Conflict',
        message: error.message,
      },
      status,
    );
  }
}
