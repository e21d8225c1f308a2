import { Redis } from 'ioredis';

/**
 * One command to the server on `port` (127.0.0.1), on its own short-lived connection, closed
 * whatever happens. No retries and no offline queue, so that a dead server fails the call at
 * once instead of holding it. The Cluster and Sentinel harnesses probe their servers with it.
 */
export async function ask(port: number, command: string, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    // disconnect() arms a timer that waits this long for the socket to close (2 s by default),
    // which would hold up Jest's exit; a socket to a live server closes at once.
    disconnectTimeout: 100,
  });
  // Failures reach the caller through the promises below; this only keeps them off the
  // unhandled 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command, ...args);
  } finally {
    // Not once the connection has ended (a dead server): the socket is closed already, and
    // disconnect() would arm that timer for nothing, since the close it waits for never comes.
    if (client.status !== 'end') client.disconnect();
  }
}

/** `field:value` lines of an INFO-style reply. */
export function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}
