import { throwError, type Observable } from 'rxjs';
import type { LockErrorBody } from './lock-error-body.js';

/**
 * Answers a microservice message (TCP, Redis, NATS, MQTT, RabbitMQ, Kafka): Nest's RPC servers
 * send the error that the handler's stream ends with as the reply.
 */
export function answerRpc(body: LockErrorBody): Observable<never> {
  return throwError(() => ({ status: 'error', ...body }));
}
