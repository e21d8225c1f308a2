import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError, LockShuttingDownError } from './lock.errors.js';

/**
 * What a client learns of a call that failed on a held lock, or was refused because this
 * instance is shutting down: the body of the HTTP answer, and (with `status: 'error'`) the
 * payload of an RPC error reply or a WebSocket `exception` event.
 */
export interface LockErrorBody {
  statusCode: 409 | 429 | 503;
  error: 'Conflict' | 'Too Many Requests' | 'Service Unavailable';
  /**
   * `LOCK_THROTTLED` for a closed `holdFor` throttle, `LOCK_SHUTTING_DOWN` for a call refused
   * by an instance that is shutting down ({@link LockShuttingDownError}), `LOCK_CONFLICT`
   * otherwise.
   */
  code: 'LOCK_CONFLICT' | 'LOCK_THROTTLED' | 'LOCK_SHUTTING_DOWN';
  /** Names the key without the module's `keyPrefix`. */
  message: string;
  /** Whole ms after which a retry can succeed, when known: {@link LockNotAcquiredError.retryAfterMs}. */
  retryAfterMs?: number;
}

/** The `extensions` of the GraphQL error a resolver that failed on a lock ends with. */
export interface LockGraphQLErrorExtensions {
  code: 'CONFLICT' | 'TOO_MANY_REQUESTS' | 'SERVICE_UNAVAILABLE';
  retryAfterMs?: number;
}

/**
 * Answers a call that failed on a held lock (`LockNotAcquiredError`), or that this instance
 * refused because it is shutting down (`LockShuttingDownError`), in each kind of Nest handler,
 * so that the client can tell a conflict (`409`) from a closed `holdFor` throttle (`429`) and
 * from an instance that is going away (`503`: retry on another one), and learn when to retry
 * where that is known:
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
 */
@Catch(LockNotAcquiredError, LockShuttingDownError)
export class LockExceptionFilter implements ExceptionFilter<
  LockNotAcquiredError | LockShuttingDownError
> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    error: LockNotAcquiredError | LockShuttingDownError,
    host: ArgumentsHost,
  ): Observable<never> | Error | void {
    const body = bodyOf(error);
    switch (host.getType<string>()) {
      case 'http':
        return this.replyHttp(body, host);
      case 'rpc': {
        // Nest's RPC servers send the error that the handler's stream ends with as the reply.
        const grpcMetadata = grpcMetadataOf(host);
        const reply = grpcMetadata
          ? grpcStatusOf(body, grpcMetadata)
          : { status: 'error', ...body };
        return throwError(() => reply);
      }
      case 'ws':
        return sendException(host, { status: 'error', ...body });
      case 'graphql':
        return graphQLErrorOf(error, body);
      default:
        throw error;
    }
  }

  private replyHttp(body: LockErrorBody, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const http = host.switchToHttp();
    const response: unknown = http.getResponse();
    if (body.retryAfterMs !== undefined) {
      adapter.setHeader(
        response,
        'Retry-After',
        String(Math.max(1, Math.ceil(body.retryAfterMs / 1000))),
      );
    }
    // The client's retry must reach another instance, not come back over this connection, as
    // Fastify's own answer to a request that reaches a closing server ensures too. HTTP/2 has
    // no such header (Node drops it with a warning): its server sends GOAWAY when it closes.
    if (body.code === 'LOCK_SHUTTING_DOWN' && httpVersionOf(http.getRequest()) === 1) {
      adapter.setHeader(response, 'Connection', 'close');
    }
    adapter.reply(response, body, body.statusCode);
  }
}

/** gRPC's status codes (grpc-js's `status`) for a held lock, a closed throttle, and shutdown. */
const GRPC_ABORTED = 10;
const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_UNAVAILABLE = 14;

/** How each transport tells each outcome. */
const OUTCOMES = {
  LOCK_CONFLICT: {
    statusCode: 409,
    error: 'Conflict',
    graphQL: 'CONFLICT',
    grpc: GRPC_ABORTED,
  },
  LOCK_THROTTLED: {
    statusCode: 429,
    error: 'Too Many Requests',
    graphQL: 'TOO_MANY_REQUESTS',
    grpc: GRPC_RESOURCE_EXHAUSTED,
  },
  LOCK_SHUTTING_DOWN: {
    statusCode: 503,
    error: 'Service Unavailable',
    graphQL: 'SERVICE_UNAVAILABLE',
    grpc: GRPC_UNAVAILABLE,
  },
} as const;

function bodyOf(error: LockNotAcquiredError | LockShuttingDownError): LockErrorBody {
  const code =
    error instanceof LockShuttingDownError
      ? 'LOCK_SHUTTING_DOWN'
      : error.throttled
        ? 'LOCK_THROTTLED'
        : 'LOCK_CONFLICT';
  const { statusCode, error: name } = OUTCOMES[code];
  const retryAfterMs = error instanceof LockNotAcquiredError ? error.retryAfterMs : undefined;
  return {
    statusCode,
    error: name,
    code,
    message: error.message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)) }),
  };
}

/**
 * The error a GraphQL resolver ends with: graphql-js copies the `extensions` of the error it
 * wraps into the response, and Apollo keeps an `extensions.code` that is set. Still an
 * instance of the class of the error it answers, and named after it, for an Apollo
 * `formatError` that looks for one.
 */
function graphQLErrorOf(
  error: LockNotAcquiredError | LockShuttingDownError,
  body: LockErrorBody,
): LockNotAcquiredError | LockShuttingDownError {
  const extensions: LockGraphQLErrorExtensions = {
    code: OUTCOMES[body.code].graphQL,
    ...(body.retryAfterMs === undefined ? {} : { retryAfterMs: body.retryAfterMs }),
  };
  return error instanceof LockShuttingDownError
    ? new LockShuttingDownGraphQLError(error.key, extensions)
    : new LockNotAcquiredGraphQLError(error, extensions);
}

class LockNotAcquiredGraphQLError extends LockNotAcquiredError {
  constructor(
    { key, waitedMs, holderTtlMs, throttled, retryAfterMs }: LockNotAcquiredError,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key, waitedMs, holderTtlMs, throttled, retryAfterMs);
    this.name = LockNotAcquiredError.name;
  }
}

class LockShuttingDownGraphQLError extends LockShuttingDownError {
  constructor(
    key: string,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key);
    this.name = LockShuttingDownError.name;
  }
}

/** The major HTTP version of an Express request or of a Fastify request's raw one. */
function httpVersionOf(request: unknown): unknown {
  const raw: unknown =
    typeof request === 'object' && request !== null && 'raw' in request ? request.raw : request;
  return typeof raw === 'object' && raw !== null && 'httpVersionMajor' in raw
    ? raw.httpVersionMajor
    : undefined;
}

/** grpc-js's `Metadata`, of which a gRPC handler's second argument is an instance. */
interface GrpcMetadata {
  set(key: string, value: string): void;
  getMap(): unknown;
}

/** The call's metadata when the handler serves a gRPC call; `undefined` for other transports. */
function grpcMetadataOf(host: ArgumentsHost): GrpcMetadata | undefined {
  const metadata: unknown = host.getArgByIndex(1);
  const isMetadata =
    typeof metadata === 'object' &&
    metadata !== null &&
    'getMap' in metadata &&
    typeof metadata.getMap === 'function' &&
    'set' in metadata &&
    typeof metadata.set === 'function';
  return isMetadata ? (metadata as GrpcMetadata) : undefined;
}

/**
 * The status a gRPC client gets: grpc-js sends an error's numeric `code`, its `details` and its
 * `metadata` (if a grpc-js `Metadata`, hence one built with the class of the call's own, as
 * this library does not load grpc-js), and `UNKNOWN` for anything else.
 */
function grpcStatusOf(body: LockErrorBody, incoming: GrpcMetadata) {
  const metadata = new (incoming.constructor as new () => GrpcMetadata)();
  metadata.set('lock-code', body.code);
  if (body.retryAfterMs !== undefined) metadata.set('retry-after-ms', String(body.retryAfterMs));
  return { code: OUTCOMES[body.code].grpc, details: body.message, metadata };
}

/** A `ws` socket, which has an `emit` too, but one that only reaches local listeners. */
interface NativeWebSocket {
  readyState: number;
  send(message: string): void;
}

/** A socket.io socket. */
interface EmittingSocket {
  emit(event: string, payload: unknown): unknown;
}

/** Sends a gateway's client the `exception` event, in the form of its adapter. */
function sendException(host: ArgumentsHost, payload: object): void {
  const ws = host.switchToWs();
  const client: unknown = ws.getClient();
  const data = { ...payload, cause: { pattern: ws.getPattern(), data: ws.getData<unknown>() } };
  if (isNativeWebSocket(client)) {
    client.send(JSON.stringify({ event: 'exception', data }));
  } else if (isEmittingSocket(client)) {
    client.emit('exception', data);
  }
}

function isNativeWebSocket(client: unknown): client is NativeWebSocket {
  return (
    typeof client === 'object' &&
    client !== null &&
    'readyState' in client &&
    typeof client.readyState === 'number' &&
    'send' in client &&
    typeof client.send === 'function'
  );
}

function isEmittingSocket(client: unknown): client is EmittingSocket {
  return (
    typeof client === 'object' &&
    client !== null &&
    'emit' in client &&
    typeof client.emit === 'function'
  );
}
