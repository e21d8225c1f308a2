import { Inject, Injectable } from '@nestjs/common';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants.js';
import { LockConnectionError, messageOf } from './lock.errors.js';
import type { ResolvedLockOptions } from './options/lock-options.interface.js';
import { backendOf, type BackendName } from './store/describe-store.js';
import type { LockStore } from './store/lock-store.interface.js';

/**
 * What {@link LockHealthIndicator.isHealthy} resolves: terminus's `HealthIndicatorResult`, in a
 * type of the library's own, so that an app without `@nestjs/terminus` compiles.
 */
export type LockHealthResult = Record<
  string,
  { status: 'up' | 'down'; backend: BackendName; [detail: string]: unknown }
>;

/** What terminus offers to build a result, where the installed version has it (11 and later). */
interface TerminusResults {
  HealthIndicatorService?: new () => {
    check(key: string): {
      up(data: Record<string, unknown>): LockHealthResult;
      down(data: Record<string, unknown>): LockHealthResult;
    };
  };
}

/**
 * A health indicator for `@nestjs/terminus` (11 and 12, an optional peer): up, with the backend
 * and the latency of one cheap round trip to it, while the lock store answers; down, with why,
 * when it does not (ZooKeeper adds its session's state). `LockModule` provides it, so a terminus
 * controller only injects it. Nothing of terminus is loaded before the first check: an app
 * without terminus never loads it.
 *
 * @example
 * ```ts
 * @Controller('health')
 * class HealthController {
 *   constructor(
 *     private readonly health: HealthCheckService,
 *     private readonly locks: LockHealthIndicator,
 *   ) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.locks.isHealthy()]);
 *   }
 * }
 * ```
 */
@Injectable()
export class LockHealthIndicator {
  private readonly backend: BackendName;
  private terminus?: Promise<TerminusResults>;

  constructor(
    @Inject(LOCK_OPTIONS) options: ResolvedLockOptions,
    @Inject(LOCK_STORE) private readonly store: LockStore,
  ) {
    this.backend = backendOf(options);
  }

  /**
   * Pings the lock store.
   * @param key the name of the indicator in terminus's report (default `'lock'`)
   * @returns `{ [key]: { status: 'up', backend, latencyMs } }`, or `{ [key]: { status: 'down',
   *   backend, message } }`; never rejects (a down store is a result, which makes terminus answer
   *   503)
   */
  async isHealthy(key = 'lock'): Promise<LockHealthResult> {
    const startedAt = performance.now();
    let details: Record<string, unknown>;
    try {
      details = await this.store.ping();
    } catch (error) {
      const message = error instanceof LockConnectionError ? error.reason : messageOf(error);
      return this.result(key, 'down', { message, ...this.store.connectionDetails?.() });
    }
    const latencyMs = Math.round((performance.now() - startedAt) * 10) / 10;
    return this.result(key, 'up', { latencyMs, ...details, ...this.store.connectionDetails?.() });
  }

  /** Built by terminus's `HealthIndicatorService` where it has one, by hand otherwise. */
  private async result(
    key: string,
    status: 'up' | 'down',
    details: Record<string, unknown>,
  ): Promise<LockHealthResult> {
    const data = { backend: this.backend, ...details };
    this.terminus ??= import('@nestjs/terminus').then(
      (terminus) => terminus as TerminusResults,
      () => ({}),
    );
    const { HealthIndicatorService } = await this.terminus;
    if (HealthIndicatorService) return new HealthIndicatorService().check(key)[status](data);
    return { [key]: { status, ...data } };
  }
}
