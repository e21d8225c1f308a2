import type { TransferOutcome, TransferParams } from '../lock-store.interface.js';
import type { PostgresQuery } from './postgres-client.js';
import type { PostgresNames } from './postgres-names.js';
import { lockOrderId } from './postgres-order.js';

/** A statement on one lock, sent once the requests for the locks in `after` have settled. */
type OrderedQuery = PostgresQuery & { after: string[] };

/**
 * `LockStore.transfer` on PostgreSQL: one UPDATE of the hold's row, which gives it the new
 * token, the adopter as its `owner` and a new expiry, keeping its fencing token, if the row is
 * live and has the fencing token given (a row that only reserves the lock for a waiter has none
 * yet). Like a renewal, it takes no advisory lock: the row's own lock orders it with every other
 * write of the row, so a release that comes first leaves no row to move, and one that comes
 * after finds the old token gone. The same statement sent again finds the row on the new
 * token, which only the adopter knows, and answers the move done. Where the fencing token
 * differs, the row is written with the values it has, so that the one statement tells that
 * case from a hold that is gone. It is sent after this process's requests for the old token's
 * lock, and before any for the new one's (see `SendOrder`).
 * @param run sends the statement on the key, as the store's other requests
 */
export async function transferRow(
  [key, token, newToken, ttl, fencingToken]: TransferParams,
  names: PostgresNames,
  owner: string,
  run: (query: OrderedQuery) => Promise<{ transferred: boolean }[]>,
): Promise<TransferOutcome> {
  const rows = await run({
    after: [lockOrderId(key, token), lockOrderId(key, newToken)],
    text: `
UPDATE ${names.holders} AS h
   SET token = CASE WHEN h.fencing_token = $5 THEN $3 ELSE h.token END,
       owner = CASE WHEN h.fencing_token = $5 THEN $4 ELSE h.owner END,
       expires_at = CASE WHEN h.fencing_token = $5
                         THEN clock_timestamp() + $6::bigint * interval '1 millisecond'
                         ELSE h.expires_at END
 WHERE h.key = $1 AND h.token IN ($2, $3) AND h.expires_at > clock_timestamp()
   AND h.fencing_token IS NOT NULL
RETURNING h.fencing_token = $5 AS transferred`,
    values: [key, token, newToken, owner, fencingToken, ttl],
  });
  if (rows.length === 0) return 'gone';
  return rows[0].transferred ? 'transferred' : 'fence-mismatch';
}
