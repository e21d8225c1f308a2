import type { ArgumentsHost } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { OUTCOMES, type LockErrorBody } from './lock-error-body.js';

/** grpc-js's `Metadata`, of which a gRPC handler's second argument is an instance. */
export interface GrpcMetadata {
  set(key: string, value: string): void;
  getMap(): unknown;
}

/** The call's metadata when the handler serves a gRPC call; `undefined` for other transports. */
export function grpcMetadataOf(host: ArgumentsHost): GrpcMetadata | undefined {
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
 * Answers a gRPC call with the status a gRPC client gets: grpc-js sends an error's numeric
 * `code`, its `details` and its `metadata` (if a grpc-js `Metadata`, hence one built with the
 * class of the call's own, as this library does not load grpc-js), and `UNKNOWN` for anything
 * else.
 */
export function answerGrpc(body: LockErrorBody, incoming: GrpcMetadata): Observable<never> {
  const metadata = new (incoming.constructor as new () => GrpcMetadata)();
  metadata.set('lock-code', body.code);
  if (body.retryAfterMs !== undefined) metadata.set('retry-after-ms', String(body.retryAfterMs));
  return throwError(() => ({ code: OUTCOMES[body.code].grpc, details: body.message, metadata }));
}
