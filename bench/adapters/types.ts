import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { CommandCounter } from '../redis/instrument.js';

const require = createRequire(import.meta.url);

/**
 * One lock implementation as the workloads drive it. Every implementation gets its own ioredis
 * connection(s), created once and reused by all workloads, and counted by `counter`.
 */
export interface LockAdapter<H = unknown> {
  /** Short id, used in keys and in the JSON file. */
  readonly id: string;
  /** Name for the tables, with the version measured. */
  readonly name: string;
  /** How it is configured to wait, for the tables' footnotes. */
  readonly waiting: string;
  readonly counter: CommandCounter;
  /**
   * Takes the lock on `key` for `ttl` ms, waiting up to about `waitMs` ms for a holder to let
   * go, as the implementation waits naturally. Rejects when it could not get the lock.
   */
  acquire(key: string, ttl: number, waitMs: number): Promise<H>;
  release(handle: H): Promise<void>;
  /** Closes every connection and timer it opened. */
  close(): Promise<void>;
}

/** Reads a dependency's version from its package.json, for naming it in the tables. */
export async function versionOf(pkg: string): Promise<string> {
  // Walk up from the package's entry point: not every package exports `./package.json`.
  let dir = require.resolve(pkg);
  for (let depth = 0; depth < 6; depth++) {
    dir = dirname(dir);
    try {
      const json = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (json.name === pkg) return String(json.version).replace(/^v/, '');
    } catch {
      // no package.json here; keep walking up
    }
  }
  return 'unknown';
}
