import type { ArgumentsHost } from '@nestjs/common';
import type { LockErrorBody } from './lock-error-body.js';

/** A `ws` socket, which has an `emit` too, but one that only reaches local listeners. */
interface NativeWebSocket {
  readyState: number;
  send(message: string): void;
}

/** A socket.io socket. */
interface EmittingSocket {
  emit(event: string, payload: unknown): unknown;
}

/**
 * Sends a gateway's client the `exception` event, in the form of its adapter (socket.io or
 * ws), with the body and the message that caused it, as Nest's own gateways do.
 */
export function answerWs(body: LockErrorBody, host: ArgumentsHost): void {
  const ws = host.switchToWs();
  const client: unknown = ws.getClient();
  const data = {
    status: 'error',
    ...body,
    cause: { pattern: ws.getPattern(), data: ws.getData<unknown>() },
  };
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
