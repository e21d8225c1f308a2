import { messageOf } from '../../lock.errors.js';
import type { LockEvent } from '../lock-store.interface.js';
import type { PgModule, PostgresListenerClient } from './postgres-client.js';

/** First and largest pause before the listener connects again, in ms. */
const FIRST_RETRY = 100;
const MAX_RETRY = 2_000;

/**
 * The one connection of a store that LISTENs, outside the pool (a pooled connection goes back
 * to the pool, and behind PgBouncer in transaction mode to another client, after each
 * statement: a LISTEN needs a session of its own). One channel per key that somebody of this
 * process waits for; a release or a turn reaches only the processes that wait for that key.
 *
 * When the connection drops, it connects again (with a growing pause), LISTENs again on every
 * channel, and tells every listener `released`: what was announced meanwhile went unheard, so
 * each waiter tries again (a notice only prompts an attempt, never makes a holder). Until then
 * the waiters' fallback re-check stands in.
 */
export class PostgresListener {
  private readonly channels = new Map<string, Set<(event: LockEvent) => void>>();
  /** Per channel, its LISTEN on the current connection, once sent. */
  private readonly listening = new Map<string, Promise<void>>();
  private client?: PostgresListenerClient;
  private connecting?: Promise<PostgresListenerClient>;
  private retry = FIRST_RETRY;
  /** The last statement sent on the connection: a client runs one at a time. */
  private sending: Promise<void> = Promise.resolve();
  private retryTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly pg: PgModule,
    private readonly config: object,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * Calls `onEvent` for every notice on `channel` until the returned function is called;
   * resolves once the LISTEN is in place.
   */
  async listen(channel: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    let listeners = this.channels.get(channel);
    if (!listeners) this.channels.set(channel, (listeners = new Set()));
    listeners.add(onEvent);
    const unlisten = () => this.unlisten(channel, onEvent);
    try {
      // The LISTEN of the channel's first listener, which a second one must wait for too.
      let listening = this.listening.get(channel);
      if (!listening) {
        listening = this.connected().then((client) => this.send(client, `LISTEN "${channel}"`));
        this.listening.set(channel, listening);
        listening.catch(() => this.listening.delete(channel));
      }
      await listening;
    } catch (error) {
      unlisten();
      throw error;
    }
    return unlisten;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.channels.clear();
    this.listening.clear();
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private unlisten(channel: string, onEvent: (event: LockEvent) => void): void {
    const listeners = this.channels.get(channel);
    if (!listeners?.delete(onEvent) || listeners.size > 0) return;
    this.channels.delete(channel);
    this.listening.delete(channel);
    if (this.client) this.send(this.client, `UNLISTEN "${channel}"`).catch(() => undefined);
  }

  private connected(): Promise<PostgresListenerClient> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<PostgresListenerClient> {
    if (this.closed) throw new Error('the lock store is closed');
    const client = new this.pg.Client(this.config);
    client.on('notification', ({ channel, payload }) => this.heard(channel, payload));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    await client.connect().catch((error: unknown) => {
      void client.end().catch(() => undefined);
      throw error;
    });
    for (const channel of this.channels.keys()) {
      await this.send(client, `LISTEN "${channel}"`);
      this.listening.set(channel, Promise.resolve());
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      throw new Error('the lock store is closed');
    }
    this.client = client;
    this.retry = FIRST_RETRY;
    return client;
  }

  /** Sends `text` once the statements sent before it have been answered: one at a time. */
  private send(client: PostgresListenerClient, text: string): Promise<void> {
    const sent = this.sending.then(() => client.query({ text })).then(() => undefined);
    this.sending = sent.catch(() => undefined);
    return sent;
  }

  private heard(channel: string, payload = ''): void {
    const event: LockEvent = payload.startsWith('turn:')
      ? { type: 'turn', token: payload.slice('turn:'.length) }
      : { type: 'released' };
    for (const listener of [...(this.channels.get(channel) ?? [])]) listener(event);
  }

  /** The connection dropped: connect again while anybody listens, then prompt every waiter. */
  private lost(client: PostgresListenerClient, error?: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.listening.clear();
    void client.end().catch(() => undefined);
    this.warn(`PostgreSQL listener connection lost${error ? `: ${messageOf(error)}` : ''}`);
    this.reconnect();
  }

  private reconnect(): void {
    if (this.closed || this.channels.size === 0 || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connected().then(
        () => {
          for (const channel of this.channels.keys()) this.heard(channel, 'released');
        },
        () => {
          this.retry = Math.min(this.retry * 2, MAX_RETRY);
          this.reconnect();
        },
      );
    }, this.retry);
    this.retryTimer.unref();
  }
}
