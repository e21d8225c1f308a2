import type { Client } from 'node-zookeeper-client';

/** What of node-zookeeper-client 1.x's connection manager is mended: private, read defensively. */
interface ConnectionManager {
  pendingBuffer?: Buffer | null;
  socket?: { destroy(error?: Error): void };
  onSocketData?: (buffer: Buffer) => void;
  onSocketClosed?: (hadError: boolean) => void;
}

/**
 * Mends two faults in how node-zookeeper-client 1.x reads the server's frames, on a client not
 * yet connected (it binds these handlers to each socket it opens):
 *
 * - The part of a frame that a connection ended in (the server paused or died mid-write, the
 *   network cut it) is kept, and glued in front of the next connection's first answer, in the
 *   same session: every answer after it is misread. It goes when a connection closes.
 * - A frame it cannot read throws out of its socket's `data` handler, an uncaught exception
 *   that ends the app. The connection is ended instead, as the library does for an answer it
 *   did not expect: the client reconnects in the same session, and the calls on their way fail
 *   with a connection loss, which the store handles as any other; `misread` hears of it.
 */
export function mendFraming(client: Client, misread: (error: unknown) => void): void {
  const manager = (client as unknown as { connectionManager?: ConnectionManager })
    .connectionManager;
  const { onSocketData: read, onSocketClosed: closed } = manager ?? {};
  if (!manager || typeof read !== 'function' || typeof closed !== 'function') return;
  manager.onSocketData = function (this: ConnectionManager, buffer: Buffer) {
    try {
      read.call(this, buffer);
    } catch (error) {
      this.pendingBuffer = null;
      this.socket?.destroy();
      misread(error);
    }
  };
  manager.onSocketClosed = function (this: ConnectionManager, hadError: boolean) {
    this.pendingBuffer = null;
    closed.call(this, hadError);
  };
}
