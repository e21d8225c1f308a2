#!/usr/bin/env node
/**
 * Packaging proof: `npm run test:compat`.
 *
 * Proves that the package as published (the `npm pack` tarball, not the source tree) installs
 * and works in throwaway apps against a real, throwaway Redis:
 *
 *   - an ES-module app on Nest 12 that `import`s the library by name,
 *   - a CommonJS app on Nest 11 that `require()`s it (through Node's require(esm)), and
 *   - an ES-module app on Nest 12 with node-redis and no ioredis at all (every client package
 *     is an optional peer, loaded on use), and one with Valkey GLIDE alone,
 *
 * so that the `exports` map, the files list, the peer ranges and the ESM/CJS interop with each
 * Nest major hold. Each app boots `LockModule.forRoot()`, runs one `@WithLock` method and one
 * `LockService.using()` call, closes the app and must then exit on its own (a leaked handle
 * shows up as a timeout). Uses REDIS_URL if set, otherwise starts `redis-server` on a free
 * loopback port. Always removes what it created. Plain Node ESM, builtins only.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APP_TIMEOUT_MS = 60_000;
const INSTALL_TIMEOUT_MS = 300_000;

/**
 * @typedef {object} App
 * @property {'esm' | 'cjs' | 'node-redis' | 'glide'} kind
 * @property {string} title
 * @property {string} nest the range of `@nestjs/common` and `@nestjs/core` it installs
 * @property {string} client the Redis client package it installs (and no other)
 * @property {string} clientRange the range of that package it installs
 * @property {string} [redisClient] the `redisClient` module option it gives
 * @property {string} [terminus] the range of `@nestjs/terminus` it installs, to check the
 *   lock store's health through terminus's own `HealthCheckService`
 * @property {string} file its source file
 * @property {'module'} [type] its package.json `type`
 */

/** @type {App[]} */
const APPS = [
  // Between them the apps cover both Nest majors, both ioredis majors of the peer ranges, and
  // apps whose only client is node-redis or GLIDE.
  {
    kind: 'esm',
    title: 'ESM app',
    nest: '^12',
    client: 'ioredis',
    clientRange: '^6',
    terminus: '^12',
    file: 'app.mjs',
    type: 'module',
  },
  {
    kind: 'cjs',
    title: 'CommonJS app',
    nest: '^11',
    client: 'ioredis',
    clientRange: '^5',
    terminus: '^11',
    file: 'app.cjs',
  },
  {
    kind: 'node-redis',
    title: 'ESM app on node-redis alone',
    nest: '^12',
    client: 'redis',
    clientRange: '^6',
    redisClient: 'node-redis',
    file: 'app.mjs',
    type: 'module',
  },
  {
    kind: 'glide',
    title: 'ESM app on Valkey GLIDE alone',
    nest: '^12',
    client: '@valkey/valkey-glide',
    clientRange: '^2.3',
    redisClient: 'glide',
    file: 'app.mjs',
    type: 'module',
  },
];

// ---------------------------------------------------------------------------------------------
// Clean-up: everything this script starts or creates is registered here and removed on exit.

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
/** @type {string[]} */
const tempDirs = [];

function cleanup() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of tempDirs.splice(0))
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`\ncompat: ${signal}, cleaning up`);
    cleanup();
    process.exit(130);
  });
}

/**
 * Runs a command; resolves with its stdout and its combined output, rejects (with the combined
 * output) on failure or timeout.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeout?: number }} [options]
 * @returns {Promise<{ stdout: string, output: string }>}
 */
function run(cmd, args, { cwd = ROOT, env = process.env, timeout = INSTALL_TIMEOUT_MS } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk) => ((stdout += chunk), (output += chunk)));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      output += `\n[killed: did not exit within ${timeout / 1000} s]`;
    }, timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(new Error(`${cmd}: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) return resolvePromise({ stdout, output });
      const how = signal ?? `exit ${code}`;
      reject(new Error(`${cmd} ${args.join(' ')} failed (${how}):\n${output}`));
    });
  });
}

/**
 * `JSON.parse`, typed as what it is: the caller says what it expects.
 * @param {string} text
 * @returns {unknown}
 */
const parseJson = (text) => JSON.parse(text);

// ---------------------------------------------------------------------------------------------
// Redis

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = createServer().on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolvePromise(port));
    });
  });
}

/** Starts a throwaway redis-server on a free loopback port (never 6379) and returns its URL. */
async function startRedis() {
  const port = await freePort();
  if (port === 6379) throw new Error('refusing to start a throwaway Redis on port 6379');
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  await new Promise((/** @type {(value: void) => void} */ ready, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis-server did not start:\n${output}`)),
      10_000,
    );
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (!/ready to accept connections/i.test(output)) return;
      clearTimeout(timer);
      ready();
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (/** @type {NodeJS.ErrnoException} */ error) => {
      clearTimeout(timer);
      if (error.code !== 'ENOENT') reject(error);
      else reject(new Error('redis-server not found on PATH: install Redis, or set REDIS_URL'));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}):\n${output}`));
    });
  });
  return `redis://127.0.0.1:${port}`;
}

// ---------------------------------------------------------------------------------------------
// The throwaway apps

/**
 * The app's source: the same checks, written once, with ESM or CommonJS imports on top.
 * @param {App} app
 */
function appSource({ kind, type, client, redisClient, terminus }) {
  const imports =
    type === 'module'
      ? `import 'reflect-metadata';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockHealthIndicator, LockModule, LockService, WithLock } from 'nestjs-redis-lock';${
          terminus ? `\nimport { HealthCheckService, TerminusModule } from '@nestjs/terminus';` : ''
        }`
      : `require('reflect-metadata');
const assert = require('node:assert/strict');
const { readFileSync } = require('node:fs');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { LockHealthIndicator, LockModule, LockService, WithLock } = require('nestjs-redis-lock');${
          terminus
            ? `\nconst { HealthCheckService, TerminusModule } = require('@nestjs/terminus');`
            : ''
        }`;
  // With terminus: the store's health as terminus's own HealthCheckService reports it.
  const health = terminus
    ? `
    const report = await app
      .get(HealthCheckService)
      .check([() => app.get(LockHealthIndicator).isHealthy('locks')]);
    assert.equal(report.status, 'ok');
    assert.equal(report.info.locks.status, 'up');
    console.log(\`@nestjs/terminus \${versionOf('@nestjs/terminus')}: locks \${report.info.locks.status}\`);`
    : '';
  // The app on another client proves that nothing loads ioredis, which it lacks.
  const absent =
    client === 'ioredis'
      ? ''
      : `
import { createRequire } from 'node:module';
assert.throws(() => createRequire(import.meta.url).resolve('ioredis'), /Cannot find module/);
console.log('ioredis: not installed');`;
  return `${imports}${absent}

const PREFIX = 'compat:${kind}:';
const versionOf = (name) =>
  JSON.parse(readFileSync(\`node_modules/\${name}/package.json\`, 'utf8')).version;
console.log(\`node \${process.version}, @nestjs/core \${versionOf('@nestjs/core')}, ${client} \${versionOf('${client}')}\`);

// Decorators applied by hand, as TypeScript would emit them.
let Draws = class Draws {
  constructor(locks) {
    this.locks = locks;
  }
  async draw(userId) {
    const lock = this.locks.current();
    assert.ok(lock, 'draw() ran without a lock');
    return lock.key;
  }
};
const draw = Object.getOwnPropertyDescriptor(Draws.prototype, 'draw');
Object.defineProperty(Draws.prototype, 'draw', Reflect.decorate([WithLock('draw:<userId>')], Draws.prototype, 'draw', draw));
Draws = Reflect.decorate([Injectable(), Reflect.metadata('design:paramtypes', [LockService])], Draws);

let AppModule = class AppModule {};
const lockModule = LockModule.forRoot({
  redis: process.env.REDIS_URL,
  keyPrefix: PREFIX,${redisClient ? `\n  redisClient: '${redisClient}',` : ''}
});
AppModule = Reflect.decorate(
  [
    Module({
      imports: [lockModule${terminus ? ', TerminusModule' : ''}],
      providers: [Draws],
    }),
  ],
  AppModule,
);

async function main() {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  try {
    const key = await app.get(Draws).draw(42);
    assert.equal(key, PREFIX + 'draw:42');
    console.log(\`@WithLock: draw(42) ran under lock \${key}\`);
    const token = await app.get(LockService).using('k', (lock) => lock?.fencingToken);
    assert.equal(typeof token, 'number', 'using() gave no lock with a numeric fencingToken');
    console.log(\`LockService.using: fencing token \${token}\`);${health}
  } finally {
    await app.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`;
}

/**
 * Writes an app into a temp dir and installs its dependencies.
 * @param {App} app
 * @param {string} tarball
 * @param {string} tempRoot
 */
async function createApp(app, tarball, tempRoot) {
  const dir = join(tempRoot, `${app.kind}-app`);
  mkdirSync(dir);
  const pkg = {
    name: `compat-${app.kind}-app`,
    private: true,
    ...(app.type && { type: app.type }),
    dependencies: {
      'nestjs-redis-lock': `file:${tarball}`,
      '@nestjs/common': app.nest,
      '@nestjs/core': app.nest,
      [app.client]: app.clientRange,
      ...(app.terminus && { '@nestjs/terminus': app.terminus }),
      'reflect-metadata': '*',
      rxjs: '^7',
    },
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  writeFileSync(join(dir, app.file), appSource(app));
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
  return dir;
}

/**
 * Runs an installed app; resolves with the installed versions and the app's output.
 * @param {App} app
 * @param {string} dir
 * @param {string} redisUrl
 */
async function runApp(app, dir, redisUrl) {
  const version = (/** @type {string} */ name) => {
    const file = join(dir, 'node_modules', name, 'package.json');
    const manifest = /** @type {{ version: string }} */ (parseJson(readFileSync(file, 'utf8')));
    return manifest.version;
  };
  const nest = `Nest ${version('@nestjs/core')} and ${app.client} ${version(app.client)}`;
  const options = {
    cwd: dir,
    env: { ...process.env, REDIS_URL: redisUrl },
    timeout: APP_TIMEOUT_MS,
  };
  try {
    const { output } = await run(process.execPath, [app.file], options);
    return { nest, ok: true, output };
  } catch (error) {
    return { nest, ok: false, output: error instanceof Error ? error.message : String(error) };
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const tempRoot = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-compat-'));
  tempDirs.push(tempRoot);

  console.log('compat: building and packing the library');
  await run('npm', ['run', 'build']);
  const pack = ['pack', '--ignore-scripts', '--json', '--pack-destination', tempRoot];
  const packed = /** @type {{ filename: string }[]} */ (parseJson((await run('npm', pack)).stdout));
  const [{ filename }] = packed;
  const tarball = join(tempRoot, filename);
  if (!existsSync(tarball)) throw new Error(`npm pack did not produce ${tarball}`);

  console.log('compat: installing the apps and starting Redis');
  const [redisUrl, ...dirs] = await Promise.all([
    process.env.REDIS_URL || startRedis(),
    ...APPS.map((app) => createApp(app, tarball, tempRoot)),
  ]);

  console.log(`compat: running the apps against ${redisUrl}`);
  const results = await Promise.all(APPS.map((app, i) => runApp(app, dirs[i], redisUrl)));

  APPS.forEach((app, i) => console.log(`\n--- ${app.title} ---\n${results[i].output.trim()}`));
  console.log('\nSummary:');
  APPS.forEach((app, i) =>
    console.log(`  ${app.title} on ${results[i].nest}: ${results[i].ok ? 'ok' : 'FAILED'}`),
  );
  console.log(`compat: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return results.every((result) => result.ok) ? 0 : 1;
}

main()
  .then((code) => (process.exitCode = code))
  .catch((error) => {
    console.error(`compat: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  })
  .finally(cleanup);
