import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { LockEngine } from './engine/lock-engine.js';
import { LeaderElections } from './leader/leader-elections.js';
import { LOCK_ENGINE } from './lock.constants.js';

/**
 * The module's part in the application's boot and shutdown, on a provider of its own so that
 * the public `LockService` offers only the lock API. Not exported: Nest finds its hooks because
 * `LockModule` provides it.
 */
@Injectable()
export class LockLifecycle
  implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  constructor(
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
    @Inject(LeaderElections) private readonly elections: LeaderElections,
  ) {}

  /**
   * The app has booted: a store that connects on its first call starts connecting now (see
   * `LockStore.open`), without waiting. Not sooner, as the elections start: a boot that fails
   * in a provider or an init hook, whose app nobody can close, opens no connection that would
   * keep its process alive.
   */
  onApplicationBootstrap(): void {
    this.engine.store.open?.();
  }

  /**
   * Shutdown begins: stops taking locks (pending waiters and new calls fail with `LockError`),
   * lets work still running under this process's locks finish within `shutdownGrace`, then
   * tells what remains that its locks are lost and releases them (bounded in time). Nest runs
   * this before an HTTP server drains its connections, which keep-alive clients can make last
   * long: other instances need not wait for that. Before all that, this instance steps down
   * from the elections it leads, so that a standby takes over at once: a leadership is no work
   * that the drain waits for; its waits to lead are refused as every waiter's are.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.elections.stop();
    // Refuses the standbys' waits with the others', giving their places in line back.
    await this.engine.stop();
    await this.elections.stopped();
  }

  /** Closes the connections the module owns (after {@link beforeApplicationShutdown}'s work). */
  async onApplicationShutdown(): Promise<void> {
    await this.engine.shutdown();
  }
}
