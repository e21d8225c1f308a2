import { LockEngine } from '../../src/engine/lock-engine.js';
import type { LeaderElections } from '../../src/leader/leader-elections.js';
import { LockService } from '../../src/lock.service.js';
import type { ResolvedLockOptions } from '../../src/options/lock-options.interface.js';
import { resolveModuleOptions } from '../../src/options/resolve-module-options.js';
import type { LockStore } from '../../src/store/lock-store.interface.js';
import type { Backend, Connection } from './backend.js';
import type { Network } from './network.js';
import type { Place } from './world.js';

/** The module options every instance of a seed shares. */
export interface InstanceOptions {
  fair: boolean;
  ttl: number;
  waitTimeout: number;
  /** How far the instances' clocks may drift from the store's, as a share of elapsed time. */
  driftFactor: number;
  commandTimeout: number;
  shutdownGrace: number;
}

/** The prefix of every key of a run. */
export const KEY_PREFIX = 'sim:';

/**
 * One app instance: the engine that ships, with its `LockService`, over its own connection to
 * the simulated store, built as the module builds them but without Nest.
 */
export class Instance implements Place {
  pausedUntil = 0;
  stalledUntil = 0;
  noticesStalledUntil = 0;
  crashed = false;
  /** Locks handed to it that it is adopting or holding (see the workload's `handOff`). */
  adopting = 0;
  readonly clockRate: number;
  readonly clockOffset: number;
  readonly deferred: (() => void)[] = [];
  readonly store: LockStore;
  private readonly connection: Connection;
  readonly engine: LockEngine;
  readonly locks: LockService;
  readonly options: ResolvedLockOptions;
  /** Its elections, when it stands in the seed's. */
  elections?: LeaderElections;
  /** Set once its shutdown has begun. */
  shutdown?: Promise<void>;

  constructor(
    readonly name: string,
    network: Network,
    backend: Backend,
    options: InstanceOptions,
    clock: { rate: number; offset: number },
  ) {
    this.clockRate = clock.rate;
    this.clockOffset = clock.offset;
    const { fair, commandTimeout, ...rest } = options;
    const keyPrefix = KEY_PREFIX;
    const warn = (message: string) => network.world.log(`warn   ${name} ${message.split(':')[0]}`);
    this.connection = backend.connect(this, { fair, keyPrefix, commandTimeout }, warn);
    this.store = this.connection.store;
    const resolved = (this.options = resolveModuleOptions({
      ...this.connection.given,
      keyPrefix,
      commandTimeout,
      instanceId: name,
      ...rest,
    }));
    this.engine = new LockEngine(resolved, this.store, warn);
    this.locks = new LockService(resolved, this.engine);
  }

  /**
   * Ends what the instance's process would take with it when it exits: its engine's
   * AsyncLocalStorage, which would otherwise slow every later promise of this process.
   */
  dispose(): void {
    const { scopes } = this.engine;
    (scopes as unknown as { context: { disable(): void } }).context.disable();
  }

  /**
   * Shuts down in the order the module's lifecycle does: steps down from the elections, stops
   * taking locks and drains, lets the candidacies end, then closes the store.
   */
  close(): Promise<void> {
    this.shutdown ??= (async () => {
      await this.elections?.stop();
      await this.engine.stop();
      await this.elections?.stopped();
      await this.engine.shutdown();
    })();
    return this.shutdown;
  }

  /** SIGKILL: nothing more runs here, and the store drops its connection. */
  crash(): void {
    this.crashed = true;
    this.connection.drop();
  }
}
