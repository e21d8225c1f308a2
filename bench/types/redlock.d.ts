/**
 * Types for `redlock` 5.0.0-beta.2, which ships a declaration file that its package.json
 * "exports" map does not expose, so TypeScript (NodeNext) cannot find it. Only what the
 * benchmark uses, as documented in redlock's README and dist/index.d.ts.
 */
declare module 'redlock' {
  import type { EventEmitter } from 'node:events';
  import type { Cluster, Redis } from 'ioredis';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  export class Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock extends EventEmitter {
    readonly settings: Settings;
    constructor(clients: Iterable<Redis | Cluster>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<unknown>;
    quit(): Promise<void>;
  }
}
