import { HANDOVER_LEASE, QUEUE_LEASE, type AcquireAttempt } from '../lock-store.interface.js';
import { FENCE_AHEAD_US } from '../throttle-window.js';
import type { PostgresNames } from './postgres-names.js';
import { tablesSql, type SchemaPart } from './postgres-tables.sql.js';

/**
 * The share of attempts that sweep expired rows of any key, and how many rows of each table
 * one sweep deletes at most: two rows per attempt on average, more than the one row an attempt
 * can leave to expire, so that rows that expire without a release (a crashed holder's, a
 * throttle's) never pile up, at a quarter of the sweep's cost per attempt.
 */
const SWEEP_SHARE = 0.25;
const SWEEP_ROWS = 8;

/**
 * The next fencing token: above the sequence's last value and never below the database's clock
 * in µs, which the sequence is then raised to. The sequence alone makes tokens grow whatever
 * the clock does; the clock keeps them growing after a failover to a replica whose sequence
 * was behind (as long as its clock is not behind the old primary's by more than the failover
 * took), as the Redis counter does.
 */
function nextFenceSql(n: PostgresNames): string {
  return `
CREATE OR REPLACE FUNCTION ${n.nextFence}() RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT CASE WHEN clock > seq THEN setval('${n.fence}', clock) ELSE seq END
  FROM (SELECT nextval('${n.fence}') AS seq,
               (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS clock) AS next
$fn$;
`;
}

/**
 * How many of a semaphore's permits the row of `column`'s token takes: the `x<permits>` of its
 * kind tag (`s<limit>x<permits>.`), 1 for every other token.
 */
function permitsOf(column: string): string {
  return `coalesce(substring(${column} FROM '^s[0-9]+x([0-9]+)[.]')::integer, 1)`;
}

/**
 * What is left, in ms, of the throttle window of a holders' row at the clock `now` (see
 * `windowLeftOf`): from the `h<holdFor>.` of its token, dated by its fencing token, which the
 * same clock issued in µs; NULL when it is no throttle or its fencing token cannot date it.
 */
function windowLeftOf(now: string): string {
  const holdFor = `substring(token FROM '^(?:(?:s[0-9]+(?:x[0-9]+)?|[rw])[.])?h([0-9]+)[.]')::bigint`;
  const nowUs = `(extract(epoch FROM ${now}) * 1000000)::bigint`;
  return `CASE WHEN fencing_token <= ${nowUs} + ${FENCE_AHEAD_US} THEN least(${holdFor},
    ceil((fencing_token - ${nowUs}) / 1000.0 + ${holdFor})::bigint) END`;
}

/**
 * Gives free room on a key to its line in order, for as long as the next live waiter fits
 * beside the holders (a writer stops the readers behind it, a waiter of another family the
 * whole line until the key is free): to `successor` (a caller of the releaser's own process,
 * or the caller that makes the attempt) at once with its whole ttl and a fencing token, which
 * is returned; to anybody else a reservation for the handover lease, announced on the key's
 * channel. Dead waiters (lease run out) are dropped on the way.
 */
function grantSql(n: PostgresNames): string {
  return `
CREATE OR REPLACE FUNCTION ${n.grant}(p_key text, p_successor text, p_channel text,
    p_now timestamptz) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  w record;
  v_fence bigint;
  v_count integer;
  v_writers integer;
  v_permits integer;
  v_family text;
BEGIN
  FOR w IN SELECT * FROM ${n.queue} WHERE key = p_key ORDER BY position LOOP
    IF w.lease_end <= p_now THEN
      DELETE FROM ${n.queue} WHERE key = p_key AND token = w.token;
      CONTINUE;
    END IF;
    SELECT count(*), count(*) FILTER (WHERE kind = 'w'), min(family),
           coalesce(sum(${permitsOf('token')}), 0)
      INTO v_count, v_writers, v_family, v_permits FROM ${n.holders} WHERE key = p_key;
    EXIT WHEN v_count > 0 AND v_family <> w.family;
    EXIT WHEN NOT CASE w.kind WHEN 's' THEN v_permits + ${permitsOf('w.token')} <= w.lim
                              WHEN 'r' THEN v_writers = 0
                              ELSE v_count = 0 END;
    DELETE FROM ${n.queue} WHERE key = p_key AND token = w.token;
    IF w.token = p_successor THEN
      v_fence := ${n.nextFence}();
      INSERT INTO ${n.holders} VALUES (p_key, w.token, w.family, w.kind, w.owner,
        p_now + w.ttl * interval '1 millisecond', v_fence);
    ELSE
      INSERT INTO ${n.holders} VALUES (p_key, w.token, w.family, w.kind, w.owner,
        p_now + least(w.ttl, ${HANDOVER_LEASE}) * interval '1 millisecond', NULL);
      PERFORM pg_notify(p_channel, 'turn:' || w.token);
    END IF;
  END LOOP;
  RETURN v_fence;
END
$fn$;
`;
}

/** The sweep of expired rows of any key that some attempts make (see {@link SWEEP_SHARE}). */
function sweepSql(n: PostgresNames): string {
  return `  IF random() < ${SWEEP_SHARE} THEN
    DELETE FROM ${n.holders} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${n.holders}
      WHERE expires_at <= v_now ORDER BY expires_at LIMIT ${SWEEP_ROWS} FOR UPDATE SKIP LOCKED));
    DELETE FROM ${n.queue} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${n.queue}
      WHERE lease_end <= v_now - interval '${2 * QUEUE_LEASE} milliseconds'
      ORDER BY lease_end LIMIT ${SWEEP_ROWS} FOR UPDATE SKIP LOCKED));
  END IF;
`;
}

/**
 * One attempt (see `LockStore.acquire`). Returns `status` 1 and the fencing token in `value`
 * when the caller holds; 0 and the ms the soonest holder has left (or -1) when it does not (it
 * then takes or keeps its place in line, with `p_queue`), with `window_ms` when every holder is
 * a throttle whose window is open (what is left of the soonest to close, by the same clock); 2 and what the key is held as in
 * `held_as` when the key is held as another kind and the caller is not a mutex (a mutex
 * waits for the key instead). Every call on a key runs under a transaction-scoped advisory
 * lock of that key, so that calls on one key apply one at a time, as Redis runs scripts; its
 * clock is read once that lock is taken. One attempt in four also sweeps a few expired rows of
 * any key (see {@link SWEEP_SHARE}).
 */
function acquireSql(n: PostgresNames): string {
  return `
CREATE OR REPLACE FUNCTION ${n.acquire}(p_key text, p_token text, p_owner text, p_ttl bigint,
    p_queue boolean, p_channel text, p_family text, p_kind text, p_limit integer,
    OUT status integer, OUT value bigint, OUT held_as text, OUT window_ms bigint)
    LANGUAGE plpgsql AS $fn$
DECLARE
  v_now timestamptz;
  v_other record;
  v_waiting boolean := false;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('${n.qualified}' || chr(1) || p_key, 0));
  v_now := clock_timestamp();
${sweepSql(n)}  DELETE FROM ${n.holders} WHERE key = p_key AND expires_at <= v_now;
  SELECT family, token INTO v_other FROM ${n.holders}
    WHERE key = p_key AND family <> p_family LIMIT 1;
  IF FOUND AND p_kind <> 'm' THEN
    status := 2;
    held_as := CASE WHEN v_other.family = 'mutex' THEN v_other.token ELSE v_other.family END;
    RETURN;
  END IF;
  UPDATE ${n.holders} SET expires_at = v_now + p_ttl * interval '1 millisecond',
      fencing_token = ${n.nextFence}(), owner = p_owner
    WHERE key = p_key AND token = p_token RETURNING fencing_token INTO value;
  IF value IS NULL AND EXISTS (SELECT FROM ${n.queue} WHERE key = p_key) THEN
    value := ${n.grant}(p_key, p_token, p_channel, v_now);
    v_waiting := EXISTS (SELECT FROM ${n.queue} WHERE key = p_key AND lease_end > v_now);
  END IF;
  IF value IS NULL AND NOT v_waiting AND (
    SELECT count(*) FILTER (WHERE family <> p_family) = 0 AND
      CASE p_kind WHEN 's' THEN coalesce(sum(${permitsOf('token')}), 0) +
                                  ${permitsOf('p_token')} <= p_limit
                  WHEN 'r' THEN count(*) FILTER (WHERE kind = 'w') = 0
                  ELSE count(*) = 0 END
    FROM ${n.holders} WHERE key = p_key
  ) THEN
    value := ${n.nextFence}();
    INSERT INTO ${n.holders} VALUES (p_key, p_token, p_family, p_kind, p_owner,
      v_now + p_ttl * interval '1 millisecond', value);
  END IF;
  IF value IS NOT NULL THEN
    status := 1;
    RETURN;
  END IF;
  IF p_queue THEN
    INSERT INTO ${n.queue} (key, token, family, kind, lim, ttl, owner, lease_end)
      VALUES (p_key, p_token, p_family, p_kind, p_limit, p_ttl, p_owner,
        v_now + interval '${QUEUE_LEASE} milliseconds')
      ON CONFLICT (key, token) DO UPDATE SET lease_end = excluded.lease_end;
  END IF;
  status := 0;
  SELECT coalesce(ceil(extract(epoch FROM min(expires_at) - v_now) * 1000)::bigint, -1),
         CASE WHEN bool_and(coalesce(${windowLeftOf('v_now')} > 0, false))
              THEN min(${windowLeftOf('v_now')}) END
    INTO value, window_ms FROM ${n.holders} WHERE key = p_key;
END
$fn$;
`;
}

/** A row of the acquire function's answer, as the driver gives it (bigints as strings). */
export interface AcquireRow {
  status: number;
  value: string;
  held_as: string | null;
  window_ms: string | null;
}

/** The attempt that an acquire row of status 1 (held) or 0 (refused) answers. */
export function attemptOf(row: AcquireRow): AcquireAttempt {
  const value = Number(row.value);
  if (row.status === 1) return { acquired: true, fencingToken: value };
  return row.window_ms === null
    ? { acquired: false, pttl: value }
    : { acquired: false, pttl: value, windowLeft: Number(row.window_ms) };
}

/**
 * Compare-and-delete (see `LockStore.release`): `released` when the caller's row was there and
 * live. The freed room goes to the line (see the grant function); with `p_announce` (fair mode
 * off), a release that went to nobody is announced as `released`. A caller that held nothing
 * leaves the line.
 */
function releaseSql(n: PostgresNames): string {
  return `
CREATE OR REPLACE FUNCTION ${n.release}(p_key text, p_token text, p_successor text,
    p_announce boolean, p_channel text, OUT released boolean, OUT fencing_token bigint)
    LANGUAGE plpgsql AS $fn$
DECLARE
  v_now timestamptz;
  v_expires timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('${n.qualified}' || chr(1) || p_key, 0));
  v_now := clock_timestamp();
  DELETE FROM ${n.queue} WHERE key = p_key AND token = p_token;
  DELETE FROM ${n.holders} WHERE key = p_key AND token = p_token RETURNING expires_at
    INTO v_expires;
  released := v_expires IS NOT NULL AND v_expires > v_now;
  IF NOT released THEN
    RETURN;
  END IF;
  DELETE FROM ${n.holders} WHERE key = p_key AND expires_at <= v_now;
  IF EXISTS (SELECT FROM ${n.queue} WHERE key = p_key) THEN
    fencing_token := ${n.grant}(p_key, p_successor, p_channel, v_now);
  END IF;
  IF p_announce AND fencing_token IS NULL THEN
    PERFORM pg_notify(p_channel, 'released');
  END IF;
END
$fn$;
`;
}

/** The functions, in the order they must be created. */
export function functionsSql(n: PostgresNames): SchemaPart[] {
  return [nextFenceSql(n), grantSql(n), acquireSql(n), releaseSql(n)].map((sql, i) => ({
    object: n.signatures[i],
    kind: 'function',
    sql,
  }));
}

/** Everything, in the order it must be created. */
export function schemaParts(n: PostgresNames): SchemaPart[] {
  return [...tablesSql(n), ...functionsSql(n)];
}
