import { Inject, Injectable } from '@nestjs/common';
import type { LockEngine } from './engine/lock-engine.js';
import { LOCK_ENGINE, LOCK_OPTIONS, LOCK_STORE } from './lock.constants.js';
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
  { status: 'up' | 'down' | 'degraded'; backend: BackendName; [detail: string]: unknown }
>;

type Status = 'up' | 'down' | 'degraded';

/** What terminus offers to build a result, where the installed version has it (11 and later). */
interface TerminusResults {
  HealthIndicatorService?: new () => {
    check(key: string): {
      up(data: Record<string, unknown>): LockHealthResult;
      down(data: Record<string, unknown>): LockHealthResult;
      /** Terminus 12: still serving, but impaired (the check does not fail). */
      degraded?(data: Record<string, unknown>): LockHealthResult;
    };
  };
}

/**
 * A health indicator for `@nestjs/terminus` (11 and 12, an optional peer): up, with the backend
 * and the latency of one cheap round trip to it, while the lock store answers; down, with why,
 * when it does not (ZooKeeper adds its session's state); degraded (terminus 12; `up` with the
 * same details on 11), with `lateRenewals`, while locks of this process are renewed late (a
 * renewal overdue by a sixth of the ttl: the event loop or the store too slow for their ttl),
 * and with a `message` while the store is impaired (Redis: replicas lag behind
 * `waitForReplicas`, so locks are refused). It never rejects. `LockModule` provides it, so a terminus
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
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
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
    try {
      // Counted before the ping, which lets the late renewals' timers run.
      const lateRenewals = this.engine.lateRenewals();
      const startedAt = performance.now();
      let details: Record<string, unknown>;
      try {
        details = await this.store.ping();
      } catch (error) {
        const message = error instanceof LockConnectionError ? error.reason : messageOf(error);
        return await this.result(key, 'down', { message, ...this.store.connectionDetails?.() });
      }
      const latencyMs = Math.round((performance.now() - startedAt) * 10) / 10;
      const { degraded, ...rest } = details;
      const data = { latencyMs, ...rest, ...this.store.connectionDetails?.() };
      if (lateRenewals === 0 && typeof degraded !== 'string') {
        return await this.result(key, 'up', data);
      }
      return await this.result(key, 'degraded', {
        ...data,
        ...(typeof degraded === 'string' ? { message: degraded } : {}),
        ...(lateRenewals > 0 ? { lateRenewals } : {}),
      });
    } catch (error) {
      // A health check reports; it never fails the caller.
      return { [key]: { status: 'down', backend: this.backend, message: messageOf(error) } };
    }
  }

  /**
   * Built by terminus's `HealthIndicatorService` where it has one, by hand otherwise.
   * `degraded` where terminus has it (12); elsewhere, a degraded store reports `up`, with the
   * details that say why, since an older terminus counts any other status as a failure.
   */
  private async result(
    key: string,
    status: Status,
    details: Record<string, unknown>,
  ): Promise<LockHealthResult> {
    const data = { backend: this.backend, ...details };
    this.terminus ??= import('@nestjs/terminus').then(
      (terminus) => terminus as TerminusResults,
      () => ({}),
    );
    const { HealthIndicatorService } = await this.terminus;
    if (!HealthIndicatorService)
      return { [key]: { status: status === 'down' ? 'down' : 'up', ...data } };
    const indicator = new HealthIndicatorService().check(key);
    if (status !== 'degraded') return indicator[status](data);
    return indicator.degraded ? indicator.degraded(data) : indicator.up(data);
  }
}
