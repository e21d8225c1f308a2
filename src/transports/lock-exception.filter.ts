import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { throttledWarning } from '../engine/throttled-warning.js';
import {
  LockConnectionError,
  LockNotAcquiredError,
  LockShuttingDownError,
  messageOf,
} from '../lock.errors.js';
import { answerGraphQL } from './graphql.js';
import { answerGrpc, grpcMetadataOf } from './grpc.js';
import { answerHttp } from './http.js';
import { bodyOf, type LockRefusal } from './lock-error-body.js';
import { answerRpc } from './rpc.js';
import { answerWs } from './ws.js';

/**
 * Answers a call that failed on a held lock (`LockNotAcquiredError`), that this instance
 * refused because it is shutting down (`LockShuttingDownError`), or whose lock store could not
 * be reached (`LockConnectionError`), in each kind of Nest handler, so that the client can tell
 * a conflict (`409`) from a closed `holdFor` throttle (`429`), from an instance that is going
 * away (`503`, `LOCK_SHUTTING_DOWN`: retry on another one) and from a store outage (`503`,
 * `LOCK_STORE_UNAVAILABLE`, with `Retry-After`: retry soon), and learn when to retry where
 * that is known:
 *
 * - HTTP (Express, Fastify): the status, a {@link LockErrorBody}, and `Retry-After`; a `503`
 *   over HTTP/1 also says `Connection: close`, so that the client's next request opens a
 *   connection that can reach another instance instead of coming back to this one.
 * - RPC: an error reply `{ status: 'error', ...LockErrorBody }`; for gRPC, the status
 *   `ABORTED` (a conflict), `RESOURCE_EXHAUSTED` (a throttle) or `UNAVAILABLE` (shutting down),
 *   the message as its details, and the trailing metadata `lock-code` (the body's `code`) and,
 *   when known, `retry-after-ms`.
 * - WebSockets (socket.io, ws): an `exception` event with `{ status: 'error',
 *   ...LockErrorBody, cause: { pattern, data } }`, as Nest's own gateways send.
 * - GraphQL: an error with `extensions` {@link LockGraphQLErrorExtensions}.
 *
 * Needs none of the packages of those contexts: it builds what each of them expects.
 * `LockModule` registers it for the whole app unless given `exceptionFilter: false`; it can
 * then be bound where wanted, as any filter.
 *
 * @example
 * ```ts
 * @Controller('orders')
 * @UseFilters(LockExceptionFilter)
 * class OrdersController {}
 * ```
 */
@Catch(LockNotAcquiredError, LockShuttingDownError, LockConnectionError)
export class LockExceptionFilter implements ExceptionFilter<LockRefusal> {
  /** What the answer leaves out of a store outage goes to the log, at most once a second. */
  private readonly outage = throttledWarning(
    (message) => new Logger(LockExceptionFilter.name).warn(message),
    1_000,
  );

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockRefusal, host: ArgumentsHost): Observable<never> | Error | void {
    if (error instanceof LockConnectionError) {
      this.outage(`Answered 503: ${error.message} (${messageOf(error.cause)})`);
    }
    const body = bodyOf(error);
    switch (host.getType<string>()) {
      case 'http':
        return answerHttp(this.adapterHost.httpAdapter, body, host);
      case 'rpc': {
        const grpcMetadata = grpcMetadataOf(host);
        return grpcMetadata ? answerGrpc(body, grpcMetadata) : answerRpc(body);
      }
      case 'ws':
        return answerWs(body, host);
      case 'graphql':
        return answerGraphQL(error, body);
      default:
        throw error;
    }
  }
}
