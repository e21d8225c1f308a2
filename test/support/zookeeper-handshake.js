import { Socket } from 'node:net';

/**
 * node-zookeeper-client bounds the TCP connect but not the session handshake after it: a server
 * still starting after a restart can take a connection and never answer it, and the client then
 * waits forever, with every call queued behind it. The tests' own clients (the checker's probe,
 * the tree a spec reads behind the library's back) cut such a connection as the library's
 * session does: while the client is not connected, its socket is cut every `everyMs`, and the
 * client connects again with the same session. Written again here, since the library keeps its
 * own private and the checker's plain ESM probe runs outside the build.
 * @param {import('node-zookeeper-client').Client} client a client about to connect
 * @param {number} everyMs
 */
export function boundHandshakes(client, everyMs) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  let closed = false;
  const watch = () => {
    stop();
    if (closed) return;
    timer = setInterval(() => {
      // A socket still making its TCP connection is left to the client's own timer of it.
      const socket = socketOf(client);
      if (socket && !socket.connecting) socket.destroy();
    }, everyMs);
    timer.unref();
  };
  client.on('connected', stop);
  client.on('disconnected', watch);
  client.on('expired', stop);
  const close = client.close.bind(client);
  client.close = () => {
    closed = true;
    stop();
    close();
  };
  watch();
}

/**
 * The socket of the client's current connection (a private field of node-zookeeper-client 1.x).
 * @param {import('node-zookeeper-client').Client} client
 */
function socketOf(client) {
  const socket = /** @type {{ connectionManager?: { socket?: unknown } }} */ (
    /** @type {unknown} */ (client)
  ).connectionManager?.socket;
  return socket instanceof Socket ? socket : undefined;
}
