import { once } from 'node:events';
import { connect, createServer } from 'node:net';

/** The xid of a watch's notification, which answers no request. */
const NOTIFICATION = -1;

/**
 * A proxy in front of one ZooKeeper server that lets the requests of all its clients through
 * one at a time, in the order it got them, each once the server has answered the one before.
 * A server applies the requests of one session in the order they were sent, but not those of
 * several sessions that reach it together: its threads read connections in no fixed order.
 * Behind the turnstile, requests of different processes that were sent one after the other are
 * applied in that order too, so that a test can tell the order in which a client sent them
 * from the order in which the server applied them.
 *
 * It reads ZooKeeper's framing only: every message is a 4-byte length and that many bytes; a
 * connection's first request is its handshake, answered by the server's first message; every
 * later request is answered by one message, and the server's other messages (notifications of
 * watches, xid -1) answer none.
 *
 * Plain JavaScript with JSDoc types, beside `tcp-proxy.js`.
 */
export class ZooKeeperTurnstile {
  /** @type {import('node:net').Server} */
  #server;
  /** @type {Set<import('node:net').Socket>} */
  #sockets = new Set();
  /**
   * Requests not yet let through, in the order they came.
   * @type {{ connection: Connection, frame: Buffer }[]}
   */
  #waiting = [];
  /**
   * The connection whose request the server has not answered yet, if any.
   * @type {Connection | undefined}
   */
  #answering;

  /**
   * Use {@link ZooKeeperTurnstile.start}.
   * @param {import('node:net').Server} server
   * @param {number} port
   */
  constructor(server, port) {
    this.#server = server;
    /** @readonly */
    this.port = port;
    /**
     * The connections, numbered from 1 in the order they were accepted.
     * @type {Connection[]}
     */
    this.connections = [];
  }

  /** `127.0.0.1:port`, for a connection string. */
  get address() {
    return `127.0.0.1:${this.port}`;
  }

  /** How many open connections have had their handshake answered: sessions that are up. */
  get sessions() {
    return this.connections.filter((connection) => connection.open && connection.answered > 0)
      .length;
  }

  /**
   * @param {number} serverPort the ZooKeeper server's client port on the loopback interface
   * @returns {Promise<ZooKeeperTurnstile>}
   */
  static async start(serverPort) {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const turnstile = new ZooKeeperTurnstile(server, address.port);
    server.on('connection', (client) => turnstile.#accept(client, serverPort));
    return turnstile;
  }

  /** Closes every connection and stops listening. */
  async stop() {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
    await once(this.#server, 'close');
  }

  /**
   * @param {import('node:net').Socket} client
   * @param {number} serverPort
   */
  #accept(client, serverPort) {
    const upstream = connect(serverPort, '127.0.0.1');
    const connection = new Connection(this.connections.length + 1, upstream);
    this.connections.push(connection);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
        this.#closed(connection);
      });
    }
    client.on(
      'data',
      frames((frame) => {
        connection.received++;
        this.#waiting.push({ connection, frame });
        this.#next();
      }),
    );
    upstream.on(
      'data',
      frames((frame) => {
        if (!client.destroyed) client.write(frame);
        // The handshake's answer has no header: the first message always answers.
        if (connection.answered > 0 && frame.readInt32BE(4) === NOTIFICATION) return;
        connection.answered++;
        if (this.#answering === connection) {
          this.#answering = undefined;
          this.#next();
        }
      }),
    );
  }

  /** Lets the next request through, unless the server has one to answer. */
  #next() {
    while (!this.#answering && this.#waiting.length > 0) {
      const { connection, frame } = /** @type {{ connection: Connection, frame: Buffer }} */ (
        this.#waiting.shift()
      );
      if (!connection.open) continue;
      this.#answering = connection;
      connection.upstream.write(frame);
    }
  }

  /** @param {Connection} connection */
  #closed(connection) {
    if (!connection.open) return;
    connection.open = false;
    if (this.#answering === connection) this.#answering = undefined;
    this.#next();
  }
}

/** One client's connection through the turnstile. */
class Connection {
  /**
   * @param {number} number
   * @param {import('node:net').Socket} upstream
   */
  constructor(number, upstream) {
    /** @readonly */
    this.number = number;
    /** @readonly */
    this.upstream = upstream;
    this.open = true;
    /** Requests the client sent, its handshake included. */
    this.received = 0;
    /** Messages of the server that answered a request, its handshake's included. */
    this.answered = 0;
  }
}

/**
 * A `data` listener that calls `onFrame` with each whole message (its length included), however
 * the stream cuts them.
 * @param {(frame: Buffer) => void} onFrame
 * @returns {(chunk: Buffer) => void}
 */
function frames(onFrame) {
  /** @type {Buffer} */
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
      const end = 4 + pending.readInt32BE(0);
      onFrame(pending.subarray(0, end));
      pending = pending.subarray(end);
    }
  };
}
