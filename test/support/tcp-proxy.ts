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

  /** Holds all traffic until {@link resume}. */
  stall(): void {
    this.stalled = true;
  }

  /** Delivers what was held, and lets traffic flow again. */
  resume(): void {
    this.stalled = false;
    for (const deliver of this.held.splice(0)) deliver();
  }

  /** Forwards every chunk `ms` later. */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  async stop(): Promise<void> {
    this.resume();
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    this.forward(client, upstream);
    this.forward(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  private forward(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      const deliver = () => {
        if (!to.destroyed) to.write(chunk);
      };
      if (this.stalled) this.held.push(deliver);
      else if (this.delayMs > 0) setTimeout(deliver, this.delayMs);
      else deliver();
    });
  }
}
