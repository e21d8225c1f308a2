import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError } from './lock.errors.js';

/**
 * What a client learns of a call that failed on a held lock: the body of the HTTP answer, and
 * (with `status: 'error'`) the payload of an RPC error reply or a WebSocket `exception` event.
 */
export interface LockErrorBody {
  statusCode: 409 | 429;
  error: 'Conflict' | 'Too Many Requests';
  /** `LOCK_THROTTLED` for a closed `holdFor` throttle, `LOCK_CONFLICT` otherwise. */
  code: 'LOCK_CONFLICT' | 'LOCK_THROTTLED';
  /** Names the key without the module's `keyPrefix`. */
  message: string;
  /** Whole ms after which a retry can succeed, when known: {@link LockNotAcquiredError.retryAfterMs}. */
  retryAfterMs?: number;
}

/** The `extensions` of the GraphQL error a resolver that failed on a held lock ends with. */
export interface LockGraphQLErrorExtensions {
  code: 'CONFLICT' | 'TOO_MANY_REQUESTS';
  retryAfterMs?: number;
}

/**
 * Answers a call that failed on a held lock (`LockNotAcquiredError`) in each kind of Nest
 * handler, so that the client can tell a conflict (`409`) from a closed `holdFor` throttle
 * (`429`) and learn when to retry where that is known:
 *
 * - HTTP (Express, Fastify): the status, a {@link LockErrorBody}, and `Retry-After`.
 * - RPC: an error reply `{ status: 'error', ...LockErrorBody }`; for gRPC, the status
 *   `ABORTED` (a conflict) or `RESOURCE_EXHAUSTED` (a throttle), the message as its details,
 *   and the trailing metadata `lock-code` (`LOCK_CONFLICT` or `LOCK_THROTTLED`) and, when
 *   known, `retry-after-ms`.
 * - WebSockets (socket.io, ws): an `exception` event with `{ status: 'error',
 *   ...LockErrorBody, cause: { pattern, data } }`, as Nest's own gateways send.
 * - GraphQL: an error with `extensions` {@link LockGraphQLErrorExtensions}.
 *
 * Needs none of the packages of those contexts: it builds what each of them expects.
 */
@Catch(LockNotAcquiredError)
export class LockExceptionFilter implements ExceptionFilter<LockNotAcquiredError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockNotAcquiredError, host: ArgumentsHost): Observable<never> | Error | void {
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
        return new LockGraphQLError(error, {
          code: error.throttled ? 'TOO_MANY_REQUESTS' : 'CONFLICT',
          ...(body.retryAfterMs === undefined ? {} : { retryAfterMs: body.retryAfterMs }),
        });
      default:
        throw error;
    }
  }

  private replyHttp(body: LockErrorBody, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    if (body.retryAfterMs !== undefined) {
      adapter.setHeader(
        response,
        'Retry-After',
        String(Math.max(1, Math.ceil(body.retryAfterMs / 1000))),
      );
    }
    adapter.reply(response, body, body.statusCode);
  }
}

const CONFLICT = { statusCode: 409, error: 'Conflict', code: 'LOCK_CONFLICT' } as const;
const THROTTLED = { statusCode: 429, error: 'Too Many Requests', code: 'LOCK_THROTTLED' } as const;

function bodyOf(error: LockNotAcquiredError): LockErrorBody {
  const { retryAfterMs } = error;
  return {
    ...(error.throttled ? THROTTLED : CONFLICT),
    message: error.message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)) }),
  };
}

/**
 * The error a GraphQL resolver ends with: graphql-js copies the `extensions` of the error it
 * wraps into the response, and Apollo keeps an `extensions.code` that is set. Still a
 * `LockNotAcquiredError`, for an Apollo `formatError` that looks for one.
 */
class LockGraphQLError extends LockNotAcquiredError {
  constructor(
    { key, waitedMs, holderTtlMs, throttled, retryAfterMs }: LockNotAcquiredError,
    readonly extensions: LockGraphQLErrorExtensions,
  ) {
    super(key, waitedMs, holderTtlMs, throttled, retryAfterMs);
  }
}

/** grpc-js's `Metadata`, of which a gRPC handler's second argument is an instance. */
interface GrpcMetadata {
  set(key: string, value: string): void;
  getMap(): unknown;
}

/** gRPC's status codes (grpc-js's `status`) for a held lock and a closed throttle. */
const GRPC_ABORTED = 10;
const GRPC_RESOURCE_EXHAUSTED = 8;

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
  const code = body.statusCode === 429 ? GRPC_RESOURCE_EXHAUSTED : GRPC_ABORTED;
  return { code, details: body.message, metadata };
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
