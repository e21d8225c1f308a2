import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { LockOptionsError, postgresLockSchema, type LockModuleOptions } from '../../src/index.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import { describeStore } from '../../src/store/describe-store.js';
import { bootLockApp } from '../support/lock-app.js';
import { PostgresServer } from '../support/postgres-server.js';

const HIDE_PACKAGE = fileURLToPath(new URL('../support/hide-package.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('PostgreSQL module options', () => {
  it('takes a URL, the fields of a PoolConfig with schema, table and listen, or a pool', () => {
    expect(resolveModuleOptions({ postgres: 'postgres://u@db:5432/app' })).toMatchObject({
      store: 'postgres',
      fair: true,
      ttl: 30_000,
      postgres: {
        config: { connectionString: 'postgres://u@db:5432/app' },
        schema: 'public',
        table: 'nestjs_lock',
      },
    });
    const listen = 'postgresql://u@db:5432/app';
    expect(
      resolveModuleOptions({
        postgres: { host: 'pgbouncer', port: 6432, schema: 'app', table: 'locks', listen },
        fair: false,
      }),
    ).toMatchObject({
      fair: false,
      postgres: {
        config: { host: 'pgbouncer', port: 6432 },
        listen: { connectionString: listen },
        schema: 'app',
        table: 'locks',
      },
    });
    const pool = new pg.Pool({ connectionString: 'postgres://u@db/app' });
    expect(resolveModuleOptions({ postgres: pool })).toMatchObject({ postgres: { pool } });
    expect(resolveModuleOptions({ postgres: { pool, table: 'locks' } })).toMatchObject({
      postgres: { pool, table: 'locks' },
    });
  });

  it.each<[string, LockModuleOptions, string, string]>([
    ['redis beside it', { postgres: 'postgres://db', redis: 'redis://x' }, 'redis', 'PostgreSQL'],
    [
      'zookeeper beside it',
      { postgres: 'postgres://db', zookeeper: 'zk:2181' },
      'zookeeper',
      'PostgreSQL',
    ],
    ['store beside it', { postgres: 'postgres://db', store: 'memory' }, 'store', 'with postgres'],
    [
      'waitForReplicas',
      { postgres: 'postgres://db', waitForReplicas: { replicas: 1, timeout: 10 } },
      'waitForReplicas',
      'synchronous_commit',
    ],
    ['nodeTimeout', { postgres: 'postgres://db', nodeTimeout: 10 }, 'nodeTimeout', 'RedLock'],
    ['a URL of another scheme', { postgres: 'mysql://db' }, 'postgres', 'postgres://'],
    ['a number', { postgres: 5432 as never }, 'postgres', 'PoolConfig'],
    ['a table with capitals', { postgres: { table: 'Locks' } }, 'postgres.table', 'identifier'],
    ['a table with a dot', { postgres: { table: 'a.b' } }, 'postgres.table', 'identifier'],
    ['a quote in the schema', { postgres: { schema: 'a"b' } }, 'postgres.schema', 'identifier'],
    ['a table name too long', { postgres: { table: 'x'.repeat(41) } }, 'postgres.table', '40'],
    [
      'a pool as listener',
      { postgres: { listen: new pg.Pool() as never } },
      'postgres.listen',
      'session',
    ],
    [
      'a pool beside fields',
      { postgres: { pool: new pg.Pool(), host: 'db' } },
      'postgres.pool',
      'not both',
    ],
  ])('refuses %s', (_, options, option, expected) => {
    const error = (() => {
      try {
        resolveModuleOptions(options);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error).toMatchObject({ option, message: expect.stringContaining(expected) as unknown });
  });

  it('logs where the locks live without a password', () => {
    const options = resolveModuleOptions({
      postgres: { connectionString: 'postgres://app:s3cret@db.internal:6432/orders', table: 't' },
    });
    expect(describeStore(options)).toBe(
      'Locks on PostgreSQL at db.internal:6432/orders (table public.t, prefix "lock:")',
    );
  });

  it('gives the SQL of the schema for migrations, and refuses names it cannot quote', () => {
    const sql = postgresLockSchema({ schema: 'app', table: 'locks' });
    expect(sql).toContain('CREATE TABLE IF NOT EXISTS "app"."locks" (');
    expect(sql).toContain('CREATE OR REPLACE FUNCTION "app"."locks_acquire_v2"(');
    expect(() => postgresLockSchema({ table: 'drop table x;' })).toThrow(LockOptionsError);
  });

  it('without pg installed, the postgres option fails the boot saying what to install', () => {
    const script = `
      import 'reflect-metadata';
      import { Module } from '@nestjs/common';
      import { NestFactory } from '@nestjs/core';
      import { LockModule } from 'nestjs-redis-lock';
      class App {}
      Module({ imports: [LockModule.forRoot({ postgres: 'postgres://u@127.0.0.1:1/x' })] })(App);
      try {
        const app = await NestFactory.createApplicationContext(App, { logger: false, abortOnError: false });
        await app.close();
        console.log('booted');
      } catch (error) {
        console.log(error.name + ': ' + error.message);
      }`;
    const child = spawnSync(
      process.execPath,
      ['--import', HIDE_PACKAGE, '--input-type=module', '-e', script],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOCK_HIDDEN_PACKAGE: 'pg' } },
    );
    expect(child.stdout.trim()).toMatch(/^LockOptionsError: .*"postgres".*npm install pg/);
  });

  describe('on a server', () => {
    let server: PostgresServer;

    beforeAll(async () => {
      server = await PostgresServer.start();
    }, 60_000);

    afterAll(() => server?.stop());

    it('creates its tables in a schema and table of its own, when instances boot together', async () => {
      const postgres = { connectionString: server.url, schema: 'locks_app', table: 'held' };
      const apps = await Promise.all(
        Array.from({ length: 4 }, () => bootLockApp({ postgres, keyPrefix: 'x:' })),
      );
      const tokens = await Promise.all(
        apps.map((app, i) => app.locks.using(`k${i}`, (lock) => lock.fencingToken)),
      );
      expect(tokens.every(Number.isSafeInteger)).toBe(true);
      await Promise.all(apps.map((app) => app.close()));
      const db = new pg.Client({ connectionString: server.url });
      await db.connect();
      const { rows } = await db.query<{ name: string }>(
        `SELECT relname AS name FROM pg_class JOIN pg_namespace n ON n.oid = relnamespace
          WHERE nspname = 'locks_app' AND relkind IN ('r', 'S') ORDER BY 1`,
      );
      await db.end();
      expect(rows.map(({ name }) => name)).toEqual([
        'held',
        'held_fence',
        'held_fenced',
        'held_queue',
        'held_queue_position_seq',
      ]);
    });

    it('uses a pool you pass and leaves it open', async () => {
      const pool = new pg.Pool({ connectionString: server.url, max: 2 });
      const app = await bootLockApp({ postgres: pool });
      await app.locks.using('mine', () => undefined);
      await app.close();
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await pool.end();
    });
  });
});
