import type { Redis } from 'ioredis';

type Command = Parameters<Redis['sendCommand']>[0];

/** One command sent while tracing. */
export interface TracedSend {
  name: string;
  /** Which of the counted connections sent it (a duplicated subscriber is another one). */
  connection: number;
  /**
   * Sends on one connection with no reply arriving in between left together, pipelined:
   * they share this number, and each distinct number is one round trip.
   */
  roundTrip: number;
  /** Monotonic ms. */
  at: number;
}

/**
 * Counts the commands that clients send, by name. `INFO commandstats` also counts the commands
 * that Lua scripts call inside Redis; this counter sees only what crosses the wire, so the two
 * together separate "work Redis does" from "requests a client makes".
 */
export class CommandCounter {
  sent = 0;
  /**
   * Pub/sub messages the counted connections received: with one subscriber per process, how
   * many processes the lock's notices woke.
   */
  received = 0;
  readonly byName = new Map<string, number>();
  private connections = 0;
  /** While tracing: every send (see {@link traceSends}), and per connection its round trips. */
  private trace?: TracedSend[];
  private readonly roundTrips = new Map<number, { current: number; replied: boolean }>();

  get tracing(): boolean {
    return this.trace !== undefined;
  }

  /** A number for one more counted connection. */
  newConnection(): number {
    return ++this.connections;
  }

  record(name: string, connection: number): void {
    this.sent++;
    this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
    if (!this.trace) return;
    let state = this.roundTrips.get(connection);
    if (!state) this.roundTrips.set(connection, (state = { current: 0, replied: false }));
    // A reply came back since this connection's last send: this send starts a new round trip.
    if (state.replied) {
      state.current++;
      state.replied = false;
    }
    this.trace.push({ name, connection, roundTrip: state.current, at: performance.now() });
  }

  /** A reply (or error) arrived on `connection`. */
  replied(connection: number): void {
    const state = this.roundTrips.get(connection);
    if (state) state.replied = true;
  }

  snapshot(): Map<string, number> {
    return new Map(this.byName);
  }

  /** Starts recording each send; `stop()` returns what was recorded. */
  traceSends(): { stop(): TracedSend[] } {
    this.trace = [];
    this.roundTrips.clear();
    return {
      stop: () => {
        const trace = this.trace ?? [];
        this.trace = undefined;
        return trace;
      },
    };
  }
}

/** Per-name difference `after − before` of two counter snapshots. */
export function countDelta(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, calls] of after) {
    const d = calls - (before.get(name) ?? 0);
    if (d !== 0) delta.set(name, d);
  }
  return delta;
}

/**
 * Makes `client` (and every connection later duplicated from it, such as a lock library's
 * pub/sub subscriber) report each command it sends to `counter`. Outside tracing, the wrapper
 * is one counter increment per command, the same for every implementation.
 */
export function instrument(client: Redis, counter: CommandCounter): Redis {
  const connection = counter.newConnection();
  const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    counter.record(command.name.toLowerCase(), connection);
    const reply = send(command, ...rest);
    if (counter.tracing) {
      const replied = () => counter.replied(connection);
      Promise.resolve(reply).then(replied, replied);
    }
    return reply;
  };
  // ioredis emits these only while listened to, besides the Buffer forms a library may use.
  for (const event of ['message', 'pmessage', 'smessage']) {
    client.on(event, () => counter.received++);
  }
  const duplicate = client.duplicate.bind(client);
  client.duplicate = (...args: Parameters<Redis['duplicate']>) =>
    instrument(duplicate(...args), counter);
  return client;
}
