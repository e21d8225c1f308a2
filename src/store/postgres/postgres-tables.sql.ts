import type { PostgresNames } from './postgres-names.js';

/**
 * One object of the schema: how to tell that it exists (`to_regnamespace`, `to_regclass` or
 * `to_regprocedure` of `object`), and the SQL that creates it.
 */
export interface SchemaPart {
  object: string;
  kind: 'schema' | 'relation' | 'function';
  sql: string;
}

/**
 * The schema, the tables, the sequence and their indexes. Every row of a lock goes with its release (or,
 * once expired, with the next attempt on its key, or with the sweep that one attempt in four
 * makes of a few expired rows of any key), so that what stays is bounded whatever the number of keys
 * ever locked: the fencing sequence, and the guards of fenced resources.
 *
 * - holders: `family` is what kinds may share the key (`mutex`, `#rw`, `#s<limit>`), `kind` the
 *   holder's (`m`, `w`, `r`, `s`); `fencing_token` is null while the row only reserves the lock
 *   for a waiter of another process, whose own attempt then takes it.
 * - queue: the line, in `position` order, with each waiter's lease on the database's clock
 *   and the ttl it asked for.
 */
export function tablesSql(n: PostgresNames): SchemaPart[] {
  return [
    { object: n.schema, kind: 'schema', sql: `CREATE SCHEMA IF NOT EXISTS ${n.schema};\n` },
    {
      object: n.holders,
      kind: 'relation',
      sql: `
CREATE TABLE IF NOT EXISTS ${n.holders} (
  key text NOT NULL,
  token text NOT NULL,
  family text NOT NULL,
  kind text NOT NULL,
  owner text NOT NULL,
  expires_at timestamptz NOT NULL,
  fencing_token bigint,
  PRIMARY KEY (key, token)
);
CREATE INDEX IF NOT EXISTS ${n.indexes.expiry} ON ${n.holders} (expires_at);
`,
    },
    {
      object: n.queue,
      kind: 'relation',
      sql: `
CREATE TABLE IF NOT EXISTS ${n.queue} (
  key text NOT NULL,
  token text NOT NULL,
  position bigint GENERATED ALWAYS AS IDENTITY,
  family text NOT NULL,
  kind text NOT NULL,
  lim integer NOT NULL,
  ttl bigint NOT NULL,
  owner text NOT NULL,
  lease_end timestamptz NOT NULL,
  PRIMARY KEY (key, token)
);
CREATE INDEX IF NOT EXISTS ${n.indexes.line} ON ${n.queue} (key, position);
CREATE INDEX IF NOT EXISTS ${n.indexes.lease} ON ${n.queue} (lease_end);
`,
    },
    {
      object: n.fenced,
      kind: 'relation',
      sql: `
CREATE TABLE IF NOT EXISTS ${n.fenced} (
  resource text PRIMARY KEY,
  fencing_token bigint NOT NULL,
  value text,
  expires_at timestamptz
);
`,
    },
    { object: n.fence, kind: 'relation', sql: `CREATE SEQUENCE IF NOT EXISTS ${n.fence};\n` },
  ];
}
