import type { ArgumentsHost } from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import type { LockErrorBody } from './lock-error-body.js';

/**
 * Answers an HTTP request (Express or Fastify, through Nest's adapter): the status, the body,
 * `Retry-After` when known, and `Connection: close` for a `503` over HTTP/1.
 */
export function answerHttp(
  adapter: AbstractHttpAdapter,
  body: LockErrorBody,
  host: ArgumentsHost,
): void {
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

/** The major HTTP version of an Express request or of a Fastify request's raw one. */
function httpVersionOf(request: unknown): unknown {
  const raw: unknown =
    typeof request === 'object' && request !== null && 'raw' in request ? request.raw : request;
  return typeof raw === 'object' && raw !== null && 'httpVersionMajor' in raw
    ? raw.httpVersionMajor
    : undefined;
}
