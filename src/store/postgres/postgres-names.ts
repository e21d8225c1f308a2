import { LockKeyResolutionError } from '../../lock.errors.js';
import { createHash } from 'node:crypto';

/**
 * The names of what the PostgreSQL backend keeps in the database, all derived from one schema
 * and one table name (validated identifiers: lower-case letters, digits and `_`), each quoted.
 * The functions carry the version of their protocol in their name, so that instances of two
 * versions of the library can share the tables while a deploy rolls.
 */
export interface PostgresNames {
  /** `schema.table`, unquoted, as messages and the notification channels name it. */
  readonly qualified: string;
  readonly schema: string;
  /** The holders: one row per lock, permit or share, and per lock reserved for a waiter. */
  readonly holders: string;
  /** The waiters' line: one row per queued caller, with its lease. */
  readonly queue: string;
  /** The guards of fenced writes: one row per resource. */
  readonly fenced: string;
  /** The sequence behind the fencing tokens. */
  readonly fence: string;
  readonly nextFence: string;
  readonly grant: string;
  readonly acquire: string;
  readonly release: string;
  /** The unqualified names of the indexes, which live in the table's schema. */
  readonly indexes: { readonly expiry: string; readonly line: string; readonly lease: string };
  /** The signatures of the functions, for `to_regprocedure`. */
  readonly signatures: readonly string[];
}

/** The version of the functions' protocol, part of their names. */
const VERSION = 'v2';

/** The names of schema `schema` and table `table` (both validated already). */
export function postgresNames(schema: string, table: string): PostgresNames {
  const quote = (name: string) => `"${schema}"."${name}"`;
  const fn = (role: string) => quote(`${table}_${role}_${VERSION}`);
  const names = {
    qualified: `${schema}.${table}`,
    schema: `"${schema}"`,
    holders: quote(table),
    queue: quote(`${table}_queue`),
    fenced: quote(`${table}_fenced`),
    fence: quote(`${table}_fence`),
    nextFence: fn('fence'),
    grant: fn('grant'),
    acquire: fn('acquire'),
    release: fn('release'),
    indexes: {
      expiry: `"${table}_expiry"`,
      line: `"${table}_queue_line"`,
      lease: `"${table}_queue_lease"`,
    },
  };
  return {
    ...names,
    signatures: [
      `${names.nextFence}()`,
      `${names.grant}(text,text,text,timestamptz)`,
      `${names.acquire}(text,text,text,bigint,boolean,text,text,text,integer)`,
      `${names.release}(text,text,text,boolean,text)`,
    ],
  };
}

/**
 * The notification channel of lock key `key` in the tables `qualified`: a digest, so that any
 * key gives a valid channel name (at most 63 bytes) and keys of other tables, or other
 * databases' apps sharing a server, never share one.
 */
export function channelOf(qualified: string, key: string): string {
  return `lock_${createHash('sha256').update(`${qualified}\0${key}`).digest('hex').slice(0, 40)}`;
}

/**
 * PostgreSQL's `text` cannot hold U+0000, which Redis and ZooKeeper take: refused with the
 * error of a bad key rather than the database's.
 */
export function withoutNul(text: string, what: string): void {
  if (text.includes('\0')) {
    throw new LockKeyResolutionError(
      `A lock ${what} on PostgreSQL must not contain U+0000, which its text type cannot hold`,
    );
  }
}
