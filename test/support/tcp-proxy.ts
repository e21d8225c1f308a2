import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a Redis server that can delay or stall traffic, to put latency on
 * the client–Redis path. While stalled it holds every byte (in both directions) until
 * `resume()`; with a delay it forwards each chunk that much later.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private stalled = false;
  private delayMs = 0;
  /** Which connections the delay applies to, by the order in which they were accepted. */
  private delayed: (connection: number) => boolean = () => true;
  private accepted = 0;
  private stalling: (connection: number) => boolean = () => true;
  private readonly held: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    server.on('connection', (client) => proxy.pipe(client, targetPort));
    return proxy;
  }

  /** Holds all traffic (or only that of the connections `which` picks) until {@link resume}. */
  stall(which: (connection: number) => boolean = () => true): void {
    this.stalled = true;
    this.stalling = which;
  }

  /** Delivers what was held, and lets traffic flow again. */
  resume(): void {
    this.stalled = false;
    for (const deliver of this.held.splice(0)) deliver();
  }

  /**
   * Forwards every chunk `ms` later; only on the connections `which` picks (numbered from 1 in
   * the order they were accepted), when given.
   */
  delay(ms: number, which: (connection: number) => boolean = () => true): void {
    this.delayMs = ms;
    this.delayed = which;
  }

  async stop(): Promise<void> {
    this.resume();
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    const connection = ++this.accepted;
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    this.forward(client, upstream, connection);
    this.forward(upstream, client, connection);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  private forward(from: Socket, to: Socket, connection: number): void {
    from.on('data', (chunk: Buffer) => {
      const deliver = () => {
        if (!to.destroyed) to.write(chunk);
      };
      if (this.stalled && this.stalling(connection)) this.held.push(deliver);
      else if (this.delayMs > 0 && this.delayed(connection)) setTimeout(deliver, this.delayMs);
      else deliver();
    });
  }
}
