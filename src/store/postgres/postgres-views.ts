import type { RenewalEntry, StoredLock } from '../lock-store.interface.js';
import type { PostgresNames } from './postgres-names.js';
import type { PostgresQuery } from './postgres-client.js';

/** The row {@link inspectQuery} answers: the live holders as JSON, and the live places. */
export interface InspectRow {
  holders: { token: string; fencing: number | null; ttl: number }[];
  waiting: string;
}

/**
 * Who holds `key` and how many wait, in one statement, on the database's clock: the holders'
 * rows that have not expired (a row reserved for a waiter has no fencing token yet), and the
 * places in its line whose lease still runs.
 */
export function inspectQuery(names: PostgresNames, key: string): PostgresQuery {
  return {
    text: `
SELECT coalesce(json_agg(json_build_object('token', token, 'fencing', fencing_token,
         'ttl', ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)))
         FILTER (WHERE token IS NOT NULL), '[]') AS holders,
       (SELECT count(*) FROM ${names.queue}
         WHERE key = $1 AND lease_end > clock_timestamp()) AS waiting
  FROM ${names.holders} WHERE key = $1 AND expires_at > clock_timestamp()`,
    values: [key],
  };
}

/** The store's view of an {@link InspectRow}. */
export function storedLockOf(row: InspectRow): StoredLock {
  return {
    holders: row.holders.map(({ token, fencing, ttl }) => ({
      token,
      ttlMs: Math.max(0, Math.round(ttl)),
      ...(fencing === null ? {} : { fencingToken: Number(fencing) }),
    })),
    waiting: Number(row.waiting),
  };
}

/** One statement that renews a batch: each row still ours and live gets its new expiry. */
export function renewQuery(names: PostgresNames, entries: readonly RenewalEntry[]): PostgresQuery {
  return {
    text: `
UPDATE ${names.holders} AS h
   SET expires_at = clock_timestamp() + e.ttl * interval '1 millisecond'
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS e(key, token, ttl)
 WHERE h.key = e.key AND h.token = e.token AND h.expires_at > clock_timestamp()
   AND h.fencing_token IS NOT NULL
RETURNING h.key, h.token`,
    values: [
      entries.map((entry) => entry.key),
      entries.map((entry) => entry.token),
      entries.map((entry) => entry.ttl),
    ],
  };
}
