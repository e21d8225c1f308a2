import type { LockStoreCapabilities } from '../capabilities.js';
import { lockNameOf } from '../../keys/lock-keys.js';
import { messageOf } from '../../lock.errors.js';
import { kindConflict, kindOfToken } from '../lock-kind.js';
import {
  type AcquireAttempt,
  type FencedWriteOutcome,
  type LockEvent,
  type LockStore,
  type ReleaseOutcome,
  type RenewalEntry,
  type StoredLock,
  type TransferParams,
} from '../lock-store.interface.js';
import { timedCommand, type TimedCommand } from '../timed-command.js';
import { loadPg, type PostgresPool, type PostgresQuery } from './postgres-client.js';
import { writeFencedRow } from './postgres-fencing.js';
import { lockOrderId, SendOrder } from './postgres-order.js';
import { PostgresListener } from './postgres-listener.js';
import { channelOf, postgresNames, withoutNul, type PostgresNames } from './postgres-names.js';
import { inspectQuery, renewQuery, storedLockOf, type InspectRow } from './postgres-views.js';
import { ensureSchema } from './postgres-schema.js';
import { attemptOf, type AcquireRow } from './postgres-schema.sql.js';
import { transferRow } from './postgres-transfer.js';
import type { ResolvedPostgres } from './postgres.options.js';

/** How the module sets up a {@link PostgresLockStore}. */
export interface PostgresLockStoreOptions {
  postgres: ResolvedPostgres;
  /** The module's `keyPrefix`: errors name a key without it, as the caller did. */
  keyPrefix: string;
  /** Waiters queue in the database and releases hand the lock over (see the Redis store). */
  fair: boolean;
  commandTimeout: number;
  /** Who holds, as the rows record it (the instance). */
  owner: string;
  /** Receives connection problems that no caller is waiting for. */
  onError: (message: string) => void;
}

/** How many expired rows the store deletes when it closes, at most. */
const SWEEP_ON_CLOSE = 1_000;

/**
 * The lock store on PostgreSQL: a lock, permit or share is a row with an expiry on the
 * database's clock (`clock_timestamp()`), written by functions that run each operation on a key
 * under a transaction-scoped advisory lock of that key, so that operations on one key apply
 * one at a time, as Redis scripts do, and with the semantics of the Redis scripts: a line of
 * waiters with leases, handovers reserved for the handover lease and announced (here with
 * NOTIFY on the key's channel, which one dedicated connection per process LISTENs to), fencing
 * tokens from a sequence kept above the clock. Every statement is one autocommitted call, so the
 * pool may sit behind PgBouncer in transaction mode.
 */
export class PostgresLockStore implements LockStore {
  readonly capabilities: LockStoreCapabilities;
  private readonly pool: PostgresPool;
  private readonly ownsPool: boolean;
  private readonly names: PostgresNames;
  private readonly command: TimedCommand;
  private readonly listener: PostgresListener;
  private ready?: Promise<void>;
  /** Attempts by key, the other requests for a lock by {@link lockOrderId} (see {@link run}). */
  private readonly order = new SendOrder();
  private readonly poolError = (error: Error) =>
    this.options.onError(`PostgreSQL connection error: ${messageOf(error)}`);

  /** @throws LockOptionsError when the package `pg` is missing */
  constructor(private readonly options: PostgresLockStoreOptions) {
    this.capabilities = {
      backend: 'PostgreSQL',
      queueing: options.fair,
      throttle: true,
      kinds: true,
      keepAlive: 'ttl',
      handles: true,
    };
    const pg = loadPg();
    const { postgres, commandTimeout } = options;
    this.names = postgresNames(postgres.schema, postgres.table);
    this.ownsPool = postgres.pool === undefined;
    this.pool =
      postgres.pool ??
      new pg.Pool({
        connectionTimeoutMillis: commandTimeout,
        application_name: 'nestjs-redis-lock',
        ...postgres.config,
      });
    this.pool.on('error', this.poolError);
    this.command = timedCommand(commandTimeout, options.keyPrefix, 'PostgreSQL');
    const listenerConfig = postgres.listen ?? postgres.config ?? postgres.pool?.options ?? {};
    this.listener = new PostgresListener(
      pg,
      { connectionTimeoutMillis: commandTimeout, ...listenerConfig },
      options.onError,
    );
  }

  async acquire(
    key: string,
    token: string,
    ttl: number,
    queue: boolean,
    inUse: () => boolean,
  ): Promise<AcquireAttempt> {
    const kind = kindOfToken(token);
    const code = kind.type === 'mutex' ? 'm' : kind.type[0];
    const limit = kind.type === 'semaphore' ? kind.limit : 0;
    const reply = this.run<AcquireRow>(key, 'acquire', {
      after: [key, lockOrderId(key, token)],
      text: `SELECT * FROM ${this.names.acquire}($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      values: [
        key,
        token,
        this.options.owner,
        ttl,
        queue,
        this.channel(key),
        kind.family,
        code,
        limit,
      ],
    });
    let row;
    try {
      [row] = await reply;
    } catch (error) {
      // An attempt that timed out may still be applied later (it waited for the key's advisory
      // lock, say): once it has, give back what it took, unless the caller holds or waits on.
      void reply.late.then(
        () => (inUse() ? undefined : this.release(key, token).catch(() => undefined)),
        () => undefined,
      );
      throw error;
    }
    if (row.status === 2) {
      throw kindConflict(lockNameOf(this.options.keyPrefix, key), token, row.held_as ?? '');
    }
    return attemptOf(row);
  }

  async release(key: string, token: string, successor = ''): Promise<ReleaseOutcome> {
    const [row] = await this.run<{ released: boolean; fencing_token: string | null }>(
      key,
      'release',
      {
        after: [lockOrderId(key, token)],
        text: `SELECT * FROM ${this.names.release}($1, $2, $3, $4, $5)`,
        values: [key, token, successor, !this.options.fair, this.channel(key)],
      },
    );
    return row.fencing_token === null
      ? { released: row.released }
      : { released: true, successorFencingToken: Number(row.fencing_token) };
  }

  /**
   * One statement for the whole batch: each row still ours and live gets its new expiry. One
   * lock's renewal (an extend) waits for the requests for it sent before (an extend, a
   * release). In a batch of many, a lock with such a request still on its way is left out and
   * answered undecided (the watchdog tries it again soon), so that a request that hangs holds
   * up no other lock's renewal.
   */
  async renew(entries: readonly RenewalEntry[]): Promise<(boolean | undefined)[]> {
    if (entries.length <= 1) return this.renewTogether(entries);
    const free = entries.filter(({ key, token }) => !this.order.pending(lockOrderId(key, token)));
    if (free.length === entries.length) return this.renewTogether(entries);
    const renewed = new Map<RenewalEntry, boolean>();
    const answers = await this.renewTogether(free);
    free.forEach((entry, i) => renewed.set(entry, answers[i]));
    return entries.map((entry) => renewed.get(entry));
  }

  private async renewTogether(entries: readonly RenewalEntry[]): Promise<boolean[]> {
    if (entries.length === 0) return [];
    const rows = await this.run<{ key: string; token: string }>(entries[0].key, 'renew', {
      after: entries.map(({ key, token }) => lockOrderId(key, token)),
      ...renewQuery(this.names, entries),
    });
    const renewed = new Set(rows.map(({ key, token }) => lockOrderId(key, token)));
    return entries.map(({ key, token }) => renewed.has(lockOrderId(key, token)));
  }

  transfer(...move: TransferParams) {
    return transferRow(move, this.names, this.options.owner, (query) =>
      this.run(move[0], 'transfer', query),
    );
  }

  async isLocked(key: string): Promise<boolean> {
    const [row] = await this.run<{ locked: boolean }>(key, 'isLocked', {
      text:
        `SELECT EXISTS (SELECT FROM ${this.names.holders} ` +
        'WHERE key = $1 AND expires_at > clock_timestamp()) AS locked',
      values: [key],
    });
    return row.locked;
  }

  async inspect(key: string): Promise<StoredLock> {
    const [row] = await this.run<InspectRow>(key, 'inspect', inspectQuery(this.names, key));
    return storedLockOf(row);
  }

  /** Releases each holder's row as its release would: the head of the line gets its turn. */
  async forceRelease(key: string): Promise<number> {
    const { holders } = await this.inspect(key);
    const outcomes = await Promise.all(holders.map(({ token }) => this.release(key, token)));
    return outcomes.filter((outcome) => outcome.released).length;
  }

  async ping(): Promise<Record<string, unknown>> {
    await this.command(this.names.holders, 'ping', () => this.pool.query({ text: 'SELECT 1' }));
    return {};
  }

  async writeFenced(
    resource: string,
    value: string,
    fencingToken: number,
    ttl: number,
  ): Promise<FencedWriteOutcome> {
    withoutNul(value, 'value');
    return this.command(resource, 'writeFenced', async () => {
      await this.schema();
      return writeFencedRow(this.pool, this.names, { resource, value, fencingToken, ttl });
    });
  }

  subscribe(key: string, onEvent: (event: LockEvent) => void): Promise<() => void> {
    return this.command(key, 'subscribe', () => this.listener.listen(this.channel(key), onEvent));
  }

  /**
   * Ends the listener, deletes expired rows that no later attempt may come to sweep (a
   * throttle's, say), and ends the pool if the module made it.
   */
  async close(): Promise<void> {
    await this.listener.close();
    if (this.ready) {
      await this.pool
        .query({
          text:
            `DELETE FROM ${this.names.holders} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ` +
            `${this.names.holders} WHERE expires_at <= clock_timestamp() LIMIT ${SWEEP_ON_CLOSE} ` +
            'FOR UPDATE SKIP LOCKED))',
        })
        .catch(() => undefined);
    }
    this.pool.removeListener('error', this.poolError);
    if (this.ownsPool) await this.pool.end();
  }

  /**
   * One statement on `key`, within `commandTimeout`, once the tables exist, and once the
   * requests that this process sent before it for the same `after` have been answered. Each may
   * run on another pooled connection, and a later one overtake it, where one Redis connection
   * or ZooKeeper session applies them in order: attempts are ordered by key, so that the line
   * gets the callers of a process in the order they came; renewals, extends and releases by
   * lock, since the engine dates a lock's validity by when the request that confirmed it was
   * sent, as if every later one were applied after it (an attempt too: one applied late sets
   * the expiry of a lock that its token holds).
   */
  private run<Row>(key: string, operation: string, query: PostgresQuery & { after?: string[] }) {
    withoutNul(key, 'key');
    const { after, ...statement } = query;
    const send = async () => {
      await this.schema();
      return (await this.pool.query<Row>(statement)).rows;
    };
    return this.command(key, operation, after ? () => this.order.run(after, send) : send);
  }

  /** Creates what is missing, once; a failed attempt is made again by the next call. */
  private schema(): Promise<void> {
    this.ready ??= ensureSchema(this.pool, this.names).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private channel(key: string): string {
    return channelOf(this.names.qualified, key);
  }
}
