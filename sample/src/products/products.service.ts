import { Inject, Injectable, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, WithLock } from 'nestjs-redis-lock';
import { STATE_STORE, type StateStore } from '../state/state-store.js';

/** Deliberately shorter than an edit takes: the watchdog keeps renewing the lock meanwhile. */
export const EDIT_LOCK_TTL = 1_000;

export interface Product {
  id: string;
  name: string;
  /** The fencing token of the edit that wrote this version. */
  fencingToken: number;
  editedAt: string;
}

export interface EditResult {
  product: Product;
  fencingToken: number;
  /** How long the edit held the lock, in ms. */
  heldMs: number;
  /** The lock's time-to-live, in ms. */
  ttl: number;
}

/**
 * The product editor: one edit of a product at a time. An edit can take longer
 * than the lock's TTL; the watchdog renews the lock for as long as the edit runs. If the lock
 * is lost anyway (Redis unreachable, the app shutting down), the edit stops and answers 503.
 */
@Injectable()
export class ProductsService {
  constructor(
    @Inject(STATE_STORE) private readonly state: StateStore,
    private readonly locks: LockService,
  ) {}

  @WithLock('product:<id>', { ttl: EDIT_LOCK_TTL, watchdog: true })
  async edit(id: string, name: string, durationMs: number): Promise<EditResult> {
    const startedAt = performance.now();
    const lock = this.locks.current()!;
    try {
      await sleep(durationMs, undefined, { signal: lock.signal });
    } catch (error) {
      if (!lock.signal.aborted) throw error;
      throw new ServiceUnavailableException(
        `The edit of product "${id}" was abandoned: ${(lock.signal.reason as Error).message}`,
      );
    }
    const product: Product = {
      id,
      name,
      fencingToken: lock.fencingToken,
      editedAt: new Date().toISOString(),
    };
    await this.state.set(productKey(id), JSON.stringify(product));
    return {
      product,
      fencingToken: lock.fencingToken,
      heldMs: Math.round(performance.now() - startedAt),
      ttl: EDIT_LOCK_TTL,
    };
  }

  async get(id: string): Promise<Product> {
    const stored = await this.state.get(productKey(id));
    if (stored === undefined) throw new NotFoundException(`No product "${id}"`);
    return JSON.parse(stored) as Product;
  }
}

const productKey = (id: string) => `product:${id}`;
