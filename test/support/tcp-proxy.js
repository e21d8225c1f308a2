import { once } from 'node:events';
import { connect, createServer } from 'node:net';

/**
 * A Redis command that subscribes (SUBSCRIBE, SSUBSCRIBE, PSUBSCRIBE), as a client sends it.
 * Only a pub/sub connection ever sends one.
 */
const SUBSCRIBE_COMMAND = /(?:^|\n)\*\d+\r\n\$\d+\r\n[sp]?subscribe\r\n/i;

/**
 * A TCP proxy in front of a server (Redis, ZooKeeper, PostgreSQL) that can delay or stall
 * traffic, to put latency on the client–server path. While stalled it holds every byte (in both directions) until
 * `resume()`; with a delay it forwards each chunk that much later. Either way the bytes of a
 * connection keep their order, as TCP keeps them: a chunk waits behind those before it.
 *
 * Plain JavaScript with JSDoc types, so that both the TypeScript specs and the plain ESM
 * safety checker can use it.
 */
export class TcpProxy {
  /** @type {Set<import('node:net').Socket>} */
  #sockets = new Set();
  /** @type {Set<Lane>} */
  #lanes = new Set();
  #stalled = false;
  /** @type {(connection: number) => boolean} */
  #stalling = () => true;
  /** Whether the servers' answers are held (see {@link holdAnswers}). */
  #holdingAnswers = false;
  /** How many bytes of the next answer get through before its connection ends (see {@link tearNextAnswer}). */
  #tearAfter = 0;
  #delayMs = 0;
  /**
   * Which connections the delay applies to, by the order in which they were accepted.
   * @type {(connection: number) => boolean}
   */
  #delayed = () => true;
  #accepted = 0;
  /** @type {Set<number>} */
  #subscribers = new Set();
  /**
   * Stalls the connection that sends next (see {@link stallNextSender}).
   * @type {((connection: number) => void) | undefined}
   */
  #catchSender;
  /** @type {import('node:net').Server} */
  #server;

  /**
   * Use {@link TcpProxy.start}.
   * @param {import('node:net').Server} server
   * @param {number} port
   */
  constructor(server, port) {
    this.#server = server;
    /** @readonly */
    this.port = port;
    /** Chunks forwarded late because of {@link delay}, so far. */
    this.delayedChunks = 0;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * @param {number} targetPort the Redis server's port on the loopback interface
   * @returns {Promise<TcpProxy>}
   */
  static async start(targetPort) {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const proxy = new TcpProxy(server, address.port);
    server.on('connection', (client) => proxy.#pipe(client, targetPort));
    return proxy;
  }

  /**
   * Holds all traffic (or only that of the connections `which` picks) until {@link resume}.
   * @param {(connection: number) => boolean} [which]
   */
  stall(which = () => true) {
    this.#stalled = true;
    this.#stalling = which;
  }

  /**
   * Holds all traffic of the first connection that sends anything from now on, from that first
   * chunk on, until {@link resume}: one request stalls on its way to the server while others,
   * on other connections, go through. Resolves with that connection's number.
   * @returns {Promise<number>}
   */
  stallNextSender() {
    return new Promise((resolve) => {
      this.#catchSender = (connection) => {
        this.#catchSender = undefined;
        this.stall((which) => which === connection);
        resolve(connection);
      };
    });
  }

  /**
   * Lets what clients send through but holds what servers answer, until {@link cut} throws it
   * away: the server applies the calls, and the client never learns that it did.
   */
  holdAnswers() {
    this.#holdingAnswers = true;
  }

  /**
   * Lets only the first `bytes` of the next chunk a server sends reach its client, then ends
   * that connection: the client is left with part of a frame, as when its peer dies mid-write.
   * @param {number} bytes
   */
  tearNextAnswer(bytes) {
    this.#tearAfter = bytes;
  }

  /** Closes every connection, dropping whatever is held; new connections flow freely. */
  cut() {
    this.#holdingAnswers = false;
    for (const lane of this.#lanes) lane.clear();
    for (const socket of this.#sockets) socket.destroy();
  }

  /** Delivers what was held, and lets traffic flow again. */
  resume() {
    this.#stalled = false;
    for (const lane of this.#lanes) lane.pump();
  }

  /**
   * Forwards every chunk `ms` later; only on the connections `which` picks (numbered from 1 in
   * the order they were accepted), when given.
   * @param {number} ms
   * @param {(connection: number) => boolean} [which]
   */
  delay(ms, which = () => true) {
    this.#delayMs = ms;
    this.#delayed = which;
  }

  /**
   * Whether the client subscribed to a channel on this connection: it is a pub/sub connection,
   * whatever the order in which it was accepted (after a reconnection, say).
   * @param {number} connection
   */
  subscribes(connection) {
    return this.#subscribers.has(connection);
  }

  async stop() {
    this.resume();
    for (const lane of this.#lanes) lane.clear();
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
    await once(this.#server, 'close');
  }

  /**
   * @param {import('node:net').Socket} client
   * @param {number} targetPort
   */
  #pipe(client, targetPort) {
    const upstream = connect(targetPort, '127.0.0.1');
    const connection = ++this.#accepted;
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    this.#forward(client, upstream, connection, true);
    this.#forward(upstream, client, connection, false);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /**
   * @param {import('node:net').Socket} from
   * @param {import('node:net').Socket} to
   * @param {number} connection
   * @param {boolean} fromClient
   */
  #forward(from, to, connection, fromClient) {
    const lane = new Lane(
      to,
      () => (this.#stalled && this.#stalling(connection)) || (!fromClient && this.#holdingAnswers),
    );
    this.#lanes.add(lane);
    from.on('close', () => {
      lane.clear();
      this.#lanes.delete(lane);
    });
    from.on('data', (/** @type {Buffer} */ chunk) => {
      if (fromClient) this.#catchSender?.(connection);
      if (
        fromClient &&
        !this.#subscribers.has(connection) &&
        SUBSCRIBE_COMMAND.test(chunk.toString('latin1'))
      ) {
        this.#subscribers.add(connection);
      }
      if (!fromClient && this.#tearAfter > 0) {
        to.end(chunk.subarray(0, this.#tearAfter));
        this.#tearAfter = 0;
        from.destroy();
        return;
      }
      const late = this.#delayMs > 0 && this.#delayed(connection);
      if (late) this.delayedChunks++;
      lane.push(chunk, late ? this.#delayMs : 0);
    });
  }
}

/** One direction of one connection: its chunks in order, each with when it may leave. */
class Lane {
  /** @type {{ chunk: Buffer, due: number }[]} */
  #queue = [];
  /** @type {NodeJS.Timeout | undefined} */
  #timer;

  /**
   * @param {import('node:net').Socket} to
   * @param {() => boolean} stalled
   */
  constructor(to, stalled) {
    this.to = to;
    this.stalled = stalled;
  }

  /**
   * @param {Buffer} chunk
   * @param {number} delayMs
   */
  push(chunk, delayMs) {
    this.#queue.push({ chunk, due: performance.now() + delayMs });
    this.pump();
  }

  /** Sends what is due, unless stalled, and arms a timer for the next chunk. */
  pump() {
    if (this.stalled()) return;
    const now = performance.now();
    while (this.#queue.length > 0 && this.#queue[0].due <= now) {
      const { chunk } = /** @type {{ chunk: Buffer }} */ (this.#queue.shift());
      if (!this.to.destroyed) this.to.write(chunk);
    }
    if (this.#queue.length === 0 || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.pump();
    }, this.#queue[0].due - now);
  }

  clear() {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
  }
}
